package main

// `lembas permissions check|list|revoke`. check: what a session would decide about one
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
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

const permissionsUsage = `usage: lembas permissions check [--mode M] [--cwd DIR] [--sandbox S] -- COMMAND...
       lembas permissions check [--mode M] [--cwd DIR] --tool read|write --path P
       lembas permissions list [--cwd DIR] [--all] [--json]
       lembas permissions revoke ID|--all [--cwd DIR]

  Prints what a session would decide (allow, ask or refuse) and the rule or
  table entry that decided. The words after -- joined with spaces are the
  shell line; --path is taken as a model would send it. --sandbox on or off
  judges as if an OS sandbox were in force or not; the default is what this
  machine gives (where none is, auto asks before what the floor cannot show
  stays inside the project). Exit status: 0 allow, 3 ask, 4 refuse, 2 usage.

  list shows what was allowed beyond single calls in the project: the
  always answers kept for it (a1, a2…), its approved MCP servers (m1…) and
  config.yaml's allow rules (c1…, changed in config.yaml); --all lists the
  kept answers of every project, --json prints them as JSON. revoke ID
  takes one back, revoke --all every always answer and MCP approval of the
  project. A session already running keeps what it read until it ends; its
  own /permissions revokes at once. Exit status: 0 done, 2 an unknown id.
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
	case "list", "revoke":
		return cmdPermissionsAllowed(args[0], args[1:], stdout, stderr)
	}
	return usageError{fmt.Sprintf("permissions: unknown subcommand %q; use: lembas permissions check|list|revoke ...", args[0])}
}

// cmdPermissionsAllowed is `lembas permissions list|revoke`: what was
// allowed beyond single calls (permission_list.go), and taking it back.
func cmdPermissionsAllowed(sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("permissions "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cwd := fs.String("cwd", ".", "")
	all := fs.Bool("all", false, "")
	asJSON := fs.Bool("json", false, "")
	help := fs.Bool("help", false, "")
	// Flags may follow the id (revoke a1 --cwd DIR): parse around it.
	var ids []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return usageError{"permissions " + sub + ": " + err.Error() + "\n" + permissionsUsage}
		}
		args = fs.Args()
		if len(args) > 0 {
			ids, args = append(ids, args[0]), args[1:]
		}
	}
	if *help {
		fmt.Fprint(stdout, permissionsUsage)
		return nil
	}
	switch {
	case sub == "list" && len(ids) > 0:
		return usageError{fmt.Sprintf("permissions list: unexpected %q; use: lembas permissions list [--cwd DIR] [--all] [--json]", ids[0])}
	case sub == "revoke" && *asJSON:
		return usageError{"permissions revoke: --json is for list"}
	case sub == "revoke" && (len(ids) == 0) == !*all || len(ids) > 1:
		return usageError{"permissions revoke: give one ID (lembas permissions list shows them) or --all"}
	}
	root, err := projectRoot(*cwd)
	if err != nil {
		return usageError{fmt.Sprintf("permissions %s: --cwd %s: %v", sub, *cwd, err)}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	p, err := newPermissionsFrom("manual", root, true, cfg)
	if err != nil {
		return err
	}
	for _, w := range p.warnings {
		fmt.Fprintln(stderr, "lembas: "+w)
	}
	if sub == "list" {
		list := p.allowedList(false)
		if *all { // every project's kept answers, and config.yaml's rules
			every := everyProjectAllowed()
			for _, e := range list {
				if e.Kind == "config" {
					every = append(every, e)
				}
			}
			list = every
		}
		if *asJSON {
			if list == nil {
				list = []allowedEntry{}
			}
			data, _ := json.MarshalIndent(map[string]any{"project": root, "allowed": list}, "", "  ")
			fmt.Fprintln(stdout, string(data))
			return nil
		}
		fmt.Fprintln(stdout, strings.Join(allowedLines(root, list), "\n"))
		return nil
	}
	if *all {
		n, err := p.revokeAllAllowed()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, permText("allowed_revoked_all", "n", n, "project", root))
		return nil
	}
	e, err := p.revokeAllowed(ids[0], false)
	var unknown errUnknownAllowed
	var inConfig errConfigAllowed
	switch {
	case errors.As(err, &unknown), errors.As(err, &inConfig):
		return usageError{"permissions revoke: " + err.Error()}
	case err != nil:
		return err
	}
	fmt.Fprintln(stdout, permText("allowed_revoked", "id", e.ID, "what", e.Rule))
	return nil
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
		return errorf("config.yaml: %v", err)
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
