package main

// usage_man.go: `lembas man`, lembas(1) in roff (the man(7) macros), drawn
// from the command-line table like --help and the completion scripts.

import (
	"fmt"
	"io"
	"strings"
)

// cmdMan is `lembas man`.
func cmdMan(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError{"use: lembas man (it takes no arguments; read it with lembas man | man -l -)"}
	}
	fmt.Fprint(stdout, manPage(theCLI()))
	return nil
}

// roff escapes text for a roff line: backslashes, a leading dot or
// apostrophe (a request otherwise), hyphens as minus signs (so options can
// be searched and copied), and any rune past ASCII as a named glyph.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '—':
			b.WriteString(`\(em`)
		case r == '…':
			b.WriteString("...")
		case r > 126:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func manPage(c *cliSpec) string {
	var b strings.Builder
	line := func(format string, a ...any) { printLine(&b, format, a...) }
	line(`.\" lembas(1), written by "lembas man" from harness/commands_cli.json.`)
	line(`.TH LEMBAS 1 "" "lembas %s" "User Commands"`, roff(version))
	line(".SH NAME")
	line(`lembas \- %s`, roff(c.Title))
	line(".SH SYNOPSIS")
	for _, f := range c.RawForms {
		line(`\fBlembas\fR %s`, roff(f.Usage))
		line(".br")
	}
	for _, cmd := range visible(c) {
		for _, u := range cmd.Usage {
			line(`\fBlembas\fR %s`, roff(u))
			line(".br")
		}
	}
	line(".SH DESCRIPTION")
	line("%s", roff(c.Description))
	line(".PP")
	for _, f := range c.RawForms {
		line(`.TP`)
		line(`\fBlembas\fR %s`, roff(f.Usage))
		line("%s", roff(f.Summary))
	}
	line(".SH OPTIONS")
	for _, f := range c.Flags {
		line(".TP")
		line(`.B %s`, roff(f.flagName()))
		s := f.Summary
		if len(f.Values) > 0 {
			s += " (one of: " + strings.Join(f.Values, ", ") + ")"
		}
		line("%s", roff(s))
	}
	line(".SH PROMPTS")
	line("%s", roff(c.PromptRule))
	line(".PP")
	line("%s", roff(c.HeadlessNote))
	line(".SH COMMANDS")
	for _, cmd := range visible(c) {
		line(".TP")
		line(`\fBlembas\fR %s`, roff(strings.Join(cmd.Usage, " | ")))
		line("%s", roff(cmd.Summary))
		if cmd.Help != "" {
			line(".IP")
			line("%s", roff(cmd.Help))
		}
		for _, s := range cmd.Subcommands {
			line(".IP")
			line(`\fB%s\fR %s`, roff(strings.TrimSpace(s.Name+" "+s.Arg)), roff("— "+s.Summary))
		}
		for _, f := range cmd.Flags {
			line(".IP")
			line(`\fB%s\fR %s`, roff(f.flagName()), roff("— "+f.Summary))
		}
	}
	line(".SH ENVIRONMENT")
	for _, e := range c.Environment {
		line(".TP")
		line(".B %s", roff(e[0]))
		line("%s", roff(e[1]))
	}
	line(".SH FILES")
	for _, f := range c.Files {
		line(".TP")
		line(".I %s", roff(f[0]))
		line("%s", roff(f[1]))
	}
	line(".SH EXIT STATUS")
	for _, e := range c.Exit {
		line(".TP")
		line(".B %d", e.Code)
		line("%s", roff(e.Text))
	}
	line(".SH NOTES")
	line("%s", roff(c.Footer))
	line(".SH SEE ALSO")
	line("%s", roff(c.SeeAlso))
	return b.String()
}

// printLine writes format, filled in, and a newline. Out of line: manPage
// calls it from about fifty places, and each inlined copy of the Fprintf
// cost the binary some hundred bytes.
//
//go:noinline
func printLine(b *strings.Builder, format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
