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
  # A file's time comes from 28 bits of its blob's hash: within the 8.5 years after 2001-09-09,
  # so two contents of one file that are the same size share one with a chance in 268 million.
  # A folder's comes from the names in it, as a folder's time changes only when an entry is
  # added, removed or renamed. Regular files and folders only: a link's time is its target's.
  {
    git diff --name-only -z HEAD | sed -z 's/^/changed\t/'
    git ls-files -s -z | sed -z -n 's/^100[67][0-9][0-9] \([0-9a-f]*\) 0\t/\1\t/p'
  } | CLEAN=$clean perl -0 -ne '
    chomp; my ($id, $path) = split /\t/, $_, 2;
    if ($id eq "changed") { $changed{$path} = 1; next }
    my @parts = split m{/}, $path;
    for my $i (0 .. $#parts) { $names{ $i ? join("/", @parts[0 .. $i - 1]) : "." }{ $parts[$i] } = 1 }
    next if $changed{$path} || -l $path;
    stamp($path, hex(substr($id, 0, 7)));
    sub stamp { my $t = 1_000_000_000 + $_[1]; utime($t, $t, $_[0]) }
    sub fnv { my $h = 2166136261; $h = (($h ^ ord) * 16777619) & 0xffffffff for split //, $_[0]; $h }
    END {
      exit unless $ENV{CLEAN};
      for my $dir (keys %names) { stamp($dir, fnv(join "/", sort keys %{ $names{$dir} }) & 0xfffffff) }
    }
  '
}
