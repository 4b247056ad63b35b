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
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program behind main, so tests can call it and deferred
// work runs before the process exits.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	if len(args) > 0 {
		switch args[0] {
		case "--version", "-version", "version":
			fmt.Fprintf(stdout, "lembas %s (harness spec %s)\n", version, harnessVersion())
			return exitOK
		case "--help", "-help", "-h", "help":
			fmt.Fprint(stdout, usageText)
			return exitOK
		case "models":
			err = cmdModels(args[1:], stdout, stderr)
		case "sessions":
			err = cmdSessions(args[1:], stdout, stderr)
		case "config":
			err = cmdConfig(args[1:], stdout, stderr)
		case "serve":
			err = cmdServe(args[1:], stdin, stdout, stderr)
		case "permissions":
			err = cmdPermissions(args[1:], stdout, stderr)
		case "sandbox":
			err = cmdSandbox(args[1:], stdout, stderr)
		case sandboxHelperArg:
			return sandboxHelper(args[1:]) // the Linux sandbox's helper (sandbox_linux.go)
		case worldHelperArg:
			return worldInit(args[1:]) // a session's world (sandbox_world_linux.go)
		case "memory":
			err = cmdMemory(args[1:], stdout, stderr)
		case "library":
			err = cmdLibrary(args[1:], stdout, stderr)
		case "login":
			err = cmdLogin(args[1:], stdin, stdout, stderr)
		case "logins":
			err = cmdLogins(args[1:], stdout)
		case "logout":
			err = cmdLogout(args[1:], stdout)
		case "trust", "untrust":
			err = cmdTrust(args[1:], args[0] == "trust", stdout)
		case "service":
			err = cmdService(args[1:], stdout, stderr)
		case "mcp":
			err = cmdMCP(args[1:], stdout, stderr)
		default:
			err = cmdRun(args, stdin, stdout, stderr)
		}
	} else {
		err = cmdRun(args, stdin, stdout, stderr)
	}
	return exitCode(err, stderr)
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

// harnessVersion reads harness/VERSION alone, so --version stays cheap.
func harnessVersion() string {
	b, err := harnessFS.ReadFile("harness/VERSION")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

const usageText = `lembas — a terminal coding agent for any OpenAI-compatible model server

Usage:
  lembas [flags] ["prompt"]       the interactive session (on a terminal; -i forces it)
  lembas -p "prompt" [flags]      run one prompt and print the answer
  lembas -p - [flags]             read the prompt from stdin (also when stdin is piped)
  lembas -c -p "prompt"           continue the newest session of this project
  lembas models                   list model refs (<connection>/<model>) and their sources
  lembas sessions list|show ID|delete ID|prune [--days N]
  lembas config get KEY|set KEY VALUE|list|path
  lembas memory list|show [user|project]|rm user|project N|--all   the memory records
  lembas library add FILE|DIR...|list|rm ID|PATH|reindex           the knowledge documents
  lembas serve --stdio            speak ACP (the Agent Client Protocol) to an editor on stdin/stdout
  lembas login URL [--name NAME] [--token-stdin] | logins | logout [NAME]   a LLeMbas instance
  lembas trust [DIR] | untrust DIR | trust --list                  the trust the REPL asks for
  lembas service [--login NAME] | service install|uninstall|status   the device link
  lembas permissions check [--mode M] [--cwd DIR] -- COMMAND...   what a session would decide
  lembas permissions check [--mode M] [--cwd DIR] --tool read|write --path P
  lembas sandbox check [--cwd DIR] [--mode M]   which OS sandbox commands run in, and what it allows
  lembas mcp list [--cwd DIR]     the MCP servers a session here would have, their state and tools
  lembas mcp login|logout NAME    log in to a remote MCP server with OAuth (shows the address to open), or forget it
  lembas --version | --help

Flags:
  -p, --print              run one prompt without the interactive session
  --output-format FORMAT   text (the final answer only), json (one object), or
                           stream-json (one event per line as it happens); default text
  --model REF              <connection>/<model>, or a model name found in any connection
                           (default: $LEMBAS_MODEL, then model: in config.yaml, then the
                           first model of the first connection that answers)
  --mode MODE              manual, edit, auto or plan (default: mode: in config.yaml, else manual)
  --cwd DIR                the project folder (default: the current folder)
  --max-steps N            stop a turn after N model requests (default from harness/loop.json)
  --effort LEVEL           the model's effort level: off (where it has the thinking switch),
                           one of its efforts, or default; a wrong one lists the model's levels
  -c, --continue           continue the newest session of this project
  --session ID             continue the session ID
  -i, --interactive        the interactive session even when stdin is not a terminal

With -p nobody can answer an approval: a call the mode would ask about is
refused, and the model is told why. Use --mode edit or --mode auto to allow more.

Environment:
  OPENAI_BASE_URL, OPENAI_API_KEY   a connection named "openai"
  LEMBAS_MODEL                      the default model
  LEMBAS_HYGIENE=off                send every tool result whole (no stubs), for measuring
  XDG_CONFIG_HOME, XDG_STATE_HOME   where config.yaml and sessions live
  NO_COLOR                          no colour in any output

Exit status:
  0 done   1 failed (model error, step limit, …)   2 usage error   130 cancelled (Ctrl-C)
  permissions check: 0 allow   3 ask   4 refuse

The interactive session: /help lists its commands; Ctrl-C cancels a turn,
Ctrl-D at an empty prompt quits. See the README's Interactive section.
`
