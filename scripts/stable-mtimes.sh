# shellcheck shell=bash
# stable-mtimes.sh — sourced by make test (scripts/test.sh).
#
#   stable_mtimes   gives every tracked file that matches HEAD a modification time derived
#                   from its content (its blob's hash in HEAD), and, when nothing is changed or
#                   untracked, every tracked folder one derived from the names in it.
# go test caches a package's result under the times and sizes of the files its tests opened
# (it does not read them), so a fresh clone, whose every file is new, ran every test that reads
# testdata or walks the sources again, though nothing in them changed. With times that follow
# the content, a clone of another commit at the same path reuses the result of every test whose
# inputs it shares; a changed file keeps the time it was written at, so a test that reads it runs
# again. Contents are never touched. Outside CI only (CI runs every test); SBF_STABLE_MTIMES=0
# turns it off. Perl (which git needs) does the work: no GNU-only flags.

stable_mtimes() {
  [ "${CI:-}" != true ] && [ "${SBF_STABLE_MTIMES:-1}" != 0 ] || return 0
  command -v perl >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0
  local clean=0
  [ -z "$(git status --porcelain --untracked-files=normal)" ] && clean=1
  # A file's time comes from 28 bits of its blob's hash: within the 8.5 years after 2001-09-09,
  # so two contents of one file that are the same size share one with a chance in 268 million.
  # A folder's comes from the names in it, as a folder's time changes only when an entry is
  # added, removed or renamed. Regular files and folders only: a link's time is its target's.
  # A file that differs from HEAD, or that git is told to assume unchanged or to skip (whose
  # edits git status does not show), keeps its time.
  CLEAN=$clean perl -e '
    sub records { local $/ = "\0"; open(my $fh, "-|", "git", @_) or die "git @_: $!"; my @r = <$fh>;
      close($fh) or die "git @_ failed\n"; chomp @r; @r }
    my %changed = map { $_ => 1 } records("diff", "--name-only", "-z", "HEAD");
    for (records("ls-files", "-v", "-z")) { $changed{substr($_, 2)} = 1 if /^[a-zS] / }
    sub fnv { my $h = 2166136261; $h = (($h ^ ord) * 16777619) & 0xffffffff for split //, $_[0]; $h }
    sub stamp { my $t = 1_000_000_000 + $_[1]; utime($t, $t, $_[0]) if (lstat $_[0])[9] != $t }
    my %names;
    for (records("ls-tree", "-r", "-z", "HEAD")) {
      my ($mode, $type, $hash, $path) = /^(\d+) (\w+) ([0-9a-f]+)\t(.*)$/s or next;
      my @parts = split m{/}, $path;
      $names{ $_ ? join("/", @parts[0 .. $_ - 1]) : "." }{ $parts[$_] } = 1 for 0 .. $#parts;
      next if $type ne "blob" || $mode !~ /^1006|^1007/ || $changed{$path} || -l $path || !-f _;
      stamp($path, hex(substr($hash, 0, 7)));
    }
    if ($ENV{CLEAN}) { stamp($_, fnv(join "/", sort keys %{ $names{$_} }) & 0xfffffff) for keys %names }
  '
}
