package main

// errors.go: the ground's program-wide facts every floor may name — the
// program's version, the exit codes, and the two errors that carry a code
// out of any command (a usage mistake, exit 2; another code). main.go turns
// them into the process's exit status.

// version is the program's version; the harness spec's is harnessVersion (harness_version.go).
var version = "0.1.0"

// Exit codes, as --help (harness/commands_cli.json) and docs/scripting.md document them.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitAsk       = 3 // permissions check: the call would be asked
	exitRefuse    = 4 // permissions check: the call would be refused
	exitNotDone   = 5 // -p: a call was refused because nobody could approve it
	exitCancelled = 130
)

// usageError is a mistake in how lembas was called: exit 2, with the fix.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitError carries an exit code other than 1 out of a command.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }
