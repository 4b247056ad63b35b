package main

// main.go: arguments, subcommands and exit codes; nothing else.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	traceInit()
	tracef("main")
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	traceEnd()
	os.Exit(code)
}

// run is the whole program behind main, so tests can call it and deferred
// work runs before the process exits.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return exitCode(cmdRun(args, stdin, stdout, stderr), stderr)
	}
	switch args[0] {
	case "--version", "-version", "version":
		fmt.Fprint(stdout, versionText())
		return exitOK
	case "--help", "-help", "-h", "help":
		if len(args) > 1 && args[0] == "help" {
			return helpFor(args[1], stdout, stderr) // lembas help sessions
		}
		fmt.Fprint(stdout, usageText())
		return exitOK
	case sandboxHelperArg:
		return sandboxHelper(args[1:]) // the Linux sandbox's helper (sandbox_linux.go)
	case worldHelperArg:
		return worldInit(args[1:]) // a session's world (sandbox_world_linux.go)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if msg := unknownCommand(args); msg != "" {
			return exitCode(usageError{msg}, stderr) // a mistyped command is never sent as a prompt
		}
		return exitCode(cmdRun(args, stdin, stdout, stderr), stderr)
	}
	if wantsHelp(args[1:]) {
		return helpFor(args[0], stdout, stderr)
	}
	return exitCode(cmd(args[1:], stdin, stdout, stderr), stderr)
}

// commands is run's dispatch: every subcommand of harness/commands_cli.json
// but version and help, and nothing else (TestCommandsMatchTable).
var commands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) error{
	"models":      func(a []string, _ io.Reader, o, e io.Writer) error { return cmdModels(a, o, e) },
	"sessions":    func(a []string, _ io.Reader, o, e io.Writer) error { return cmdSessions(a, o, e) },
	"config":      cmdConfigAndWriteBack,
	"serve":       cmdServe,
	"permissions": func(a []string, _ io.Reader, o, e io.Writer) error { return cmdPermissions(a, o, e) },
	"sandbox":     func(a []string, _ io.Reader, o, e io.Writer) error { return cmdSandbox(a, o, e) },
	"memory":      func(a []string, _ io.Reader, o, e io.Writer) error { return cmdMemory(a, o, e) },
	"library":     func(a []string, _ io.Reader, o, e io.Writer) error { return cmdLibrary(a, o, e) },
	"login":       cmdLogin,
	"logins":      func(a []string, _ io.Reader, o, _ io.Writer) error { return cmdLogins(a, o) },
	"logout":      func(a []string, _ io.Reader, o, _ io.Writer) error { return cmdLogout(a, o) },
	"trust":       func(a []string, _ io.Reader, o, _ io.Writer) error { return cmdTrust(a, true, o) },
	"untrust":     func(a []string, _ io.Reader, o, _ io.Writer) error { return cmdTrust(a, false, o) },
	"service":     func(a []string, _ io.Reader, o, e io.Writer) error { return cmdService(a, o, e) },
	"mcp":         func(a []string, _ io.Reader, o, e io.Writer) error { return cmdMCP(a, o, e) },
	"completion":  func(a []string, _ io.Reader, o, _ io.Writer) error { return cmdCompletion(a, o) },
	"man":         func(a []string, _ io.Reader, o, _ io.Writer) error { return cmdMan(a, o) },
}

// cmdConfigAndWriteBack is `lembas config`: a set of a personalization key
// goes to the instance too (login_api.go configWriteBack).
func cmdConfigAndWriteBack(a []string, _ io.Reader, o, e io.Writer) error {
	err := cmdConfig(a, o, e)
	if err == nil && len(a) == 3 && a[0] == "set" {
		err = configWriteBack(a[1], a[2], o)
	}
	return err
}

// helpFor prints one command's help: exit 0, or 2 for a name that is not
// a command.
func helpFor(name string, stdout, stderr io.Writer) int {
	h := commandHelp(name)
	if h == "" {
		return exitCode(usageError{theCLI().text("unknown_help", "word", name, "commands", strings.Join(theCLI().names(), ", "))}, stderr)
	}
	fmt.Fprint(stdout, h)
	return exitOK
}

// exitCode reports err on stderr and maps it to the exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "lembas: %s\n", ue.msg)
		return exitUsage
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "lembas: %s\n", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "lembas: %s\n", strings.TrimSpace(err.Error()))
	return exitFailure
}
