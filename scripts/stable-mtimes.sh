# shellcheck shell=bash
# stable-mtimes.sh — sourced by make test (scripts/test.sh).
#
#   stable_mtimes   gives every tracked file that matches HEAD a modification time derived
#                   from its content (its blob's hash), and, when nothing is changed or
#                   untracked, every tracked folder one derived from its tree's hash.
# go test caches a package's result under the times and sizes of the files its tests opened
# (it does not read them), so a fresh clone, whose every file is new, ran every test that reads
# testdata or walks the sources again, though nothing in them changed. With times that follow
# the content, a clone of another commit reuses the result of every test whose inputs it shares;
# a changed file keeps the time it was written at, so a test that reads it runs again. Contents
# are never touched. Outside CI only (CI runs every test); SBF_STABLE_MTIMES=0 turns it off.

stable_mtimes() {
  [ "${CI:-}" != true ] && [ "${SBF_STABLE_MTIMES:-1}" != 0 ] || return 0
  command -v perl >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0
  local clean=0
  [ -z "$(git status --porcelain --untracked-files=normal)" ] && clean=1
  # Regular files and folders only (a link's time would be its target's); a time within the
  # 8.5 years after 2001-09-09, from 28 bits of the object's hash: two contents of one file
  # that are the same size share one with a chance of one in 268 million.
  {
    git diff --name-only -z HEAD | sed -z 's/^/changed\t/'
    git ls-files -s -z | sed -z -n 's/^100[67][0-9][0-9] \([0-9a-f]*\) 0\t/\1\t/p'
    if [ "$clean" = 1 ]; then
      printf '%s\t.\0' "$(git rev-parse 'HEAD^{tree}')"
      git ls-tree -r -d -z HEAD | sed -z 's/^040000 tree //'
    fi
  } | perl -0 -ne '
    chomp; my ($id, $path) = split /\t/, $_, 2;
    if ($id eq "changed") { $changed{$path} = 1; next }
    next if $changed{$path} || -l $path;
    my $t = 1_000_000_000 + hex(substr($id, 0, 7));
    utime($t, $t, $path);
  '
}
