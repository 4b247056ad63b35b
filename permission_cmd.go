package main

// `lembas permissions check`: what a session would decide about one
// command line or one path, and the rule or table entry that decided it,
// with the same defaults, config.yaml rules and always answers a session
// of that project reads. People use it to write rules; tests use it too.
//
//	lembas permissions check [--mode M] [--cwd DIR] -- COMMAND…
//	lembas permissions check [--mode M] [--cwd DIR] --tool read|write --path P
//
// Exit 0 allow, 3 ask, 4 refuse, 2 usage.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
)

const permissionsUsage = `usage: lembas permissions check [--mode M] [--cwd DIR] [--sandbox S] -- COMMAND...
       lembas permissions check [--mode M] [--cwd DIR] --tool read|write --path P

  Prints what a session would decide (allow, ask or refuse) and the rule or
  table entry that decided. The words after -- joined with spaces are the
  shell line; --path is taken as a model would send it. --sandbox on or off
  judges as if an OS sandbox were in force or not; the default is what this
  machine gives (where none is, auto asks before what the floor cannot show
  stays inside the project). Exit status: 0 allow, 3 ask, 4 refuse, 2 usage.
`

// cmdPermissions is `lembas permissions`.
func cmdPermissions(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"permissions: missing subcommand; use: lembas permissions check ..."}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, permissionsUsage)
		return nil
	case "check":
		return cmdPermissionsCheck(args[1:], stdout, stderr)
	}
	return usageError{fmt.Sprintf("permissions: unknown subcommand %q; use: lembas permissions check ...", args[0])}
}

// cmdPermissionsCheck decides one call the way a session would, but asks
// nobody: the verdict is the answer.
func cmdPermissionsCheck(args []string, stdout, stderr io.Writer) error {
	var words []string
	dash := false
	for i, a := range args {
		if a == "--" {
			words, args, dash = args[i+1:], args[:i], true
			break
		}
	}
	fs := flag.NewFlagSet("permissions check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mode := fs.String("mode", "", "")
	cwd := fs.String("cwd", ".", "")
	tool := fs.String("tool", "", "")
	pathArg := fs.String("path", "", "")
	sandboxArg := fs.String("sandbox", "", "")
	help := fs.Bool("help", false, "")
	if err := fs.Parse(args); err != nil {
		return usageError{"permissions check: " + err.Error() + "\n" + permissionsUsage}
	}
	if *help {
		fmt.Fprint(stdout, permissionsUsage)
		return nil
	}
	pathSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "path" {
			pathSet = true
		}
	})
	switch {
	case fs.NArg() > 0:
		return usageError{fmt.Sprintf("permissions check: unexpected %q; put the command after --", fs.Arg(0))}
	case dash && (*tool != "" || pathSet):
		return usageError{"permissions check: give either -- COMMAND or --tool and --path, not both"}
	case dash && strings.TrimSpace(strings.Join(words, " ")) == "":
		return usageError{"permissions check: the command after -- is empty"}
	case !dash && *tool == "":
		return usageError{"permissions check: give -- COMMAND or --tool read|write --path P"}
	case !dash && *tool != "read" && *tool != "write":
		return usageError{fmt.Sprintf("permissions check: --tool %q; use read or write", *tool)}
	case *sandboxArg != "" && *sandboxArg != "on" && *sandboxArg != "off":
		return usageError{fmt.Sprintf("permissions check: --sandbox %q; use on or off", *sandboxArg)}
	case !dash && *pathArg == "":
		return usageError{"permissions check: --path is empty; give the path as a model would send it"}
	}
	root, err := projectRoot(*cwd)
	if err != nil {
		return usageError{fmt.Sprintf("permissions check: --cwd %s: %v", *cwd, err)}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	modeName := *mode
	if modeName == "" {
		modeName = cfg.Mode
	}
	m, err := normMode(modeName)
	if err != nil {
		if *mode != "" {
			return usageError{"permissions check: " + err.Error()}
		}
		return fmt.Errorf("config.yaml: %v", err)
	}
	p, err := newPermissionsFrom(m, root, false, cfg)
	if err != nil {
		return err
	}
	for _, w := range p.warnings {
		fmt.Fprintln(stderr, "lembas: "+w)
	}
	switch *sandboxArg {
	case "on":
	case "off":
		p.setSandbox("--sandbox off")
	default:
		p.setSandbox(sandboxWhy(newSandbox(cfg.Sandbox, root)))
	}
	var t *toolSpec
	var callArgs []byte
	if dash {
		t = theSpec().Tools[theArityShellTool()]
		callArgs, _ = json.Marshal(map[string]string{"command": strings.Join(words, " ")})
	} else {
		t = theSpec().Tools[*tool]
		callArgs, _ = json.Marshal(map[string]string{"path": *pathArg})
	}
	d := p.decide(t, callArgs)
	verdict, code := d.Verdict, exitOK
	switch d.Verdict {
	case "ask":
		code = exitAsk
	case "deny":
		verdict, code = "refuse", exitRefuse
	}
	fmt.Fprintf(stdout, "%s\nrule: %s\n", verdict, d.Rule)
	if d.Reason != "" {
		fmt.Fprintf(stdout, "reason: %s\n", d.Reason)
	}
	if code != exitOK {
		return exitError{code: code}
	}
	return nil
}
