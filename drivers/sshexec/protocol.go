package sshexec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/internal/shellquote"
)

// The guest shell's script. The shell runs a loop that keeps a subshell
// forked ahead of the next command (the "spare"), blocked reading that
// command's line, which moves the fork off the command's path. Measured
// under software emulation (a 2-vCPU QEMU guest, 40 commands after each
// pause): a command's round trip went from 6.3 to 3.9 ms with 4 ms
// between commands, 11.3 to 7.3 ms with 30 ms, 19.4 to 15.6 ms with 300 ms
// (an idle guest wakes slowly whatever runs in it). The spare evaluates
// the line and prints the command's markers itself, so a command costs
// the guest one process wake-up; the shell then prints its own markers
// (" p" after the number) and forks the next spare. Only spares read stdin
// after the greeting, a byte at a time (`read`), so no command line can
// end up in the shell's input buffer.
//
// The spare prints its markers on the shell's own streams, which the
// greeting keeps on descriptors 8 and 9: closed for the command (the
// redirection on its eval, which the shell undoes after it), so a command
// that moved its stdout or stderr elsewhere (exec >file) does not get a
// marker in its file, and nothing it starts holds them. Printed after the
// eval, with no /proc checks, EXIT trap or redirection that opens a file
// (under emulation an open of /dev/null costs ~0.3 ms): 7.0 -> 5.8 ms a
// command 2 ms apart, interleaved on one guest (docs/performance.md).
//
// The shell's markers are the fallback, read when the spare did not
// print: the command ended the spare itself (exit, a failure under set -e,
// exec), or a signal killed it. When the spare did print, the shell's
// markers still follow on the streams; the next command passes what
// precedes them on and skips them. A command that may set an EXIT trap
// (its text says "trap") is sent with trapMark before its line: its spare
// prints nothing and ends after it, so the trap's output, which comes as
// the spare ends, precedes the shell's markers and stays the command's.
// (A trap that a sourced file sets is not seen: what it prints as the
// spare ends comes after the markers, at the start of the next command's
// output, as a background job's late output does.)
//
// A long command would cost a system call per byte: its line is instead
// "@" and its length, followed by the command, which the spare reads with
// `head -c` (a fork and an exec, but no longer per byte).

// maxSpareLine is the longest command line a spare reads a byte at a time.
const maxSpareLine = 1024

// nlVar holds a newline in the guest shell, so that a command's line
// break can travel inside the spare's one line.
const nlVar = "__sbf_nl"

// greeting makes the shell survive the signals forwarded to its commands
// (they reach its whole session, itself included), keeps its stdout and
// stderr on descriptors 8 and 9 for its spares' markers, prints its pid
// (which leads that session) after pidMarker and starts the loop. Command
// n's marker is markerOf(token, n).
func greeting(pidMarker, token string) string {
	return fmt.Sprintf("trap : INT TERM HUP QUIT; exec 8>&1 9>&2; %s='\n'; __sbf_n=0; printf '%s %%d\\n' $$; "+
		"while :; do __sbf_n=$((__sbf_n+1)); %s; "+
		"printf '%s-%%d: p %%d\\n' \"$__sbf_n\" $?; printf '%s-%%d: p\\n' \"$__sbf_n\" >&2; done\n",
		nlVar, pidMarker, spare(token), token, token)
}

// A shell that evaluates a command (a spare, or the `sh -c` of a session
// of its own) is in the command's session, so a forwarded Ctrl-C reaches
// it too. Left to SIGINT's default it would end at once, before the
// command it waits for, and report 130 where the command, which may trap
// the signal, ends with a status of its own (a trap's `exit 9`, as ssh -t
// passes on) and may still write: output that would then follow the
// shell's markers. statusTrap makes it wait for the command and end with
// its status, or with 130 when that status is 0 (the command ended
// quietly, or a list of commands was cut short: never a success after an
// interrupt) or no command ran (a loop of builtins stops too). Commands
// it starts get SIGINT's default, as with ssh. Only SIGINT: for TERM, HUP
// and QUIT a shell that outlived its command would print "Terminated"
// (dash reports a foreground command killed by any other signal), so
// there the shell still ends first, as before. (A Ctrl-C that comes just
// as the shell forks a command, before the command's exec, is the shell's
// alone: the command runs on, and the next Ctrl-C reaches it.)
const statusTrap = `trap '__sbf_i=$?; exit $((__sbf_i ? __sbf_i : 130))' INT`

// StatusPassing is a shell script that runs command as `sh -c command`
// would, ending with the command's status after a forwarded Ctrl-C
// (statusTrap): what a session of its own, and the sim, hand to sh -c.
func StatusPassing(command string) string {
	return statusTrap + "; eval " + shellquote.Quote(command)
}

// spare is the subshell that runs the next command: it reads the
// command's line (and, for "@", the command after it), evaluates it with
// descriptors 8 and 9 closed and prints the markers on them. A line with
// trapMark first is evaluated the same way and the spare ends after it
// (`exit`, with the command's status), printing nothing. At the end of its
// input it ends the shell: the client has gone. (The number is read after
// the eval: a command that sets __sbf_n and ends on its own leaves a line
// of output with another number, and the shell's markers end it.)
func spare(token string) string {
	const long = `__sbf_c=$(head -c "${__sbf_c#@}")`
	const run = statusTrap + `; eval "$__sbf_c" 8>&- 9>&- </dev/null`
	return `( IFS= read -r __sbf_c || { kill -s KILL $$; exit; }; case $__sbf_c in ` +
		`'` + trapMark + `'*) __sbf_c=${__sbf_c#?}; case $__sbf_c in @*) ` + long + `;; esac; ` + run + `; exit;; ` +
		`@*) ` + long + `;; esac; ` + run + `; ` +
		fmt.Sprintf(`printf '%s-%%d: %%d\n' "$__sbf_n" $? >&8; printf '%s-%%d:\n' "$__sbf_n" >&9 )`, token, token)
}

// trapMark before a command's line says the command may set an EXIT trap:
// its spare leaves the markers to the shell (see above).
const trapMark = "!"

// commandLine is what the shell is sent for one command: the spare's line.
func commandLine(command string) string {
	mark := ""
	if strings.Contains(command, "trap") {
		mark = trapMark
	}
	line := "eval " + strings.ReplaceAll(shellquote.Quote(command), "\n", `'"$`+nlVar+`"'`)
	if len(line) <= maxSpareLine {
		return mark + line + "\n"
	}
	return mark + "@" + strconv.Itoa(len(command)) + "\n" + command
}

// ending is how a command's marker line ended one stream: the status (on
// stdout), and whether the spare printed it, so the shell's own marker
// line is still to come.
type ending struct {
	status     string
	shellOwing bool
}

// parseEnding reads what followed a command's marker on its line.
func parseEnding(rest string) ending {
	if rest == "p" {
		return ending{}
	}
	if s, ok := strings.CutPrefix(rest, "p "); ok {
		return ending{status: s}
	}
	return ending{status: rest, shellOwing: true}
}

// markerOf is the marker of command n of the shell with token. The colon
// ends the number: command 9's marker is not the start of command 99's.
func markerOf(token string, n int) string { return token + "-" + strconv.Itoa(n) + ":" }
