// lembas is a terminal coding agent for any OpenAI-compatible model server.
//
// The command line is data: harness/commands_cli.json holds the subcommands,
// their forms and flags, the flags' values, the environment and the exit
// codes; `lembas --help`, `lembas COMMAND --help`, `lembas completion
// bash|zsh|fish` and `lembas man` are drawn from it. The manual is `lembas
// man`, the README and docs/.
package main

// usage.go: the command-line table (harness/commands_cli.json) and what is
// drawn from it here — the help texts, the unknown-command check with its
// nearest spelling, and --version's build stamp. The completion scripts
// are usage_complete.go's, the manual page usage_man.go's.

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
)

type cliFlag struct {
	Long     string   `json:"long"`
	Short    string   `json:"short,omitempty"`
	Value    string   `json:"value,omitempty"`
	Values   []string `json:"values,omitempty"`
	Complete string   `json:"complete,omitempty"`
	Summary  string   `json:"summary"`
}

type cliSub struct {
	Name     string `json:"name"`
	Arg      string `json:"arg,omitempty"`
	Complete string `json:"complete,omitempty"`
	Summary  string `json:"summary"`
}

type cliCommand struct {
	Name        string    `json:"name"`
	Usage       []string  `json:"usage"`
	Summary     string    `json:"summary"`
	Help        string    `json:"help,omitempty"`
	Subcommands []cliSub  `json:"subcommands,omitempty"`
	Flags       []cliFlag `json:"flags,omitempty"`
	Args        string    `json:"args,omitempty"` // what a positional word completes to, without subcommands
	Hidden      bool      `json:"hidden,omitempty"`
}

type cliSpec struct {
	About        string                            `json:"about"`
	Name         string                            `json:"name"`
	Title        string                            `json:"title"`
	Description  string                            `json:"description"`
	RawForms     []struct{ Usage, Summary string } `json:"forms"`
	Flags        []cliFlag                         `json:"flags"`
	PromptRule   string                            `json:"prompt_rule"`
	HeadlessNote string                            `json:"headless_note"`
	Commands     []cliCommand                      `json:"commands"`
	Environment  [][2]string                       `json:"environment"`
	Exit         []cliExit                         `json:"exit"`
	Footer       string                            `json:"footer"`
	Files        [][2]string                       `json:"files"`
	SeeAlso      string                            `json:"see_also"`
	Texts        map[string]string                 `json:"texts"`
}

// cliExit is one exit status: [code, meaning].
type cliExit struct {
	Code int
	Text string
}

func (e *cliExit) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return errorf("an exit status is [code, text]: %s", b)
	}
	if err := json.Unmarshal(pair[0], &e.Code); err != nil {
		return err
	}
	return json.Unmarshal(pair[1], &e.Text)
}

var (
	cliOnce sync.Once
	cliVal  *cliSpec
	cliErr  error
)

// theCLI is the command-line table, parsed on first use: --help and an
// unknown first word need it, -p "a prompt" never reads it.
func theCLI() *cliSpec {
	cliOnce.Do(func() {
		cliVal = &cliSpec{}
		cliErr = decodeStrict(harnessFS, "harness/commands_cli.json", cliVal)
	})
	if cliErr != nil {
		panic("harness: " + cliErr.Error())
	}
	return cliVal
}

// command is the table's entry for name, or nil.
func (c *cliSpec) command(name string) *cliCommand {
	for i := range c.Commands {
		if c.Commands[i].Name == name {
			return &c.Commands[i]
		}
	}
	return nil
}

// names are the commands a person is shown (not the hidden aliases).
//
//go:noinline
func (c *cliSpec) names() []string {
	var out []string
	for _, cmd := range c.Commands {
		if !cmd.Hidden {
			out = append(out, cmd.Name)
		}
	}
	return out
}

// text fills one of the table's texts; plain replacement, so --help and
// the unknown-command check compile no regexp (lazy.go).
func (c *cliSpec) text(key string, kv ...string) string {
	return strings.NewReplacer(braced(kv)...).Replace(c.Texts[key])
}

func braced(kv []string) []string {
	out := make([]string, len(kv))
	for i := range kv {
		out[i] = kv[i]
		if i%2 == 0 {
			out[i] = "{{" + kv[i] + "}}"
		}
	}
	return out
}

// flagName is how a flag is written in help: "-p, --print" or "--mode MODE".
//
//go:noinline
func (f cliFlag) flagName() string {
	s := "--" + f.Long
	if f.Short != "" {
		s = "-" + f.Short + ", " + s
	}
	if f.Value != "" {
		s += " " + f.Value
	}
	return s
}

// wrap breaks text into lines of at most width runes, each after the first
// indented by indent spaces.
func wrap(text string, width, indent int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		l := len([]rune(w))
		if i > 0 && n+1+l > width {
			b.WriteString("\n" + strings.Repeat(" ", indent))
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += l
	}
	return b.String()
}

// column writes "  left  right", right wrapped beside left at col, or on
// the next line when left is too wide.
func column(b *strings.Builder, left, right string, col int) {
	line := "  " + left
	if right == "" {
		b.WriteString(line + "\n")
		return
	}
	if len([]rune(line)) >= col-1 {
		b.WriteString(line + "\n" + strings.Repeat(" ", col))
	} else {
		b.WriteString(line + strings.Repeat(" ", col-len([]rune(line))))
	}
	b.WriteString(wrap(right, 100-col, col) + "\n")
}

// usageText is `lembas --help`.
func usageText() string {
	c := theCLI()
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s\n\nUsage:\n", c.Name, c.Title)
	for _, f := range c.RawForms {
		column(&b, c.Name+" "+f.Usage, f.Summary, 34)
	}
	for _, cmd := range c.Commands {
		if cmd.Hidden {
			continue
		}
		for i, u := range cmd.Usage {
			s := cmd.Summary
			if i > 0 {
				s = ""
			}
			column(&b, c.Name+" "+u, s, 34)
		}
	}
	b.WriteString("  " + c.Name + " --version | --help | COMMAND --help\n\nFlags:\n")
	for _, f := range c.Flags {
		column(&b, f.flagName(), f.Summary, 27)
	}
	b.WriteString("\n" + wrap(c.PromptRule, 78, 0) + "\n\n" + wrap(c.HeadlessNote, 78, 0) + "\n\nEnvironment:\n")
	for _, e := range c.Environment {
		column(&b, e[0], e[1], 36)
	}
	b.WriteString("\nExit status:\n")
	for _, e := range c.Exit {
		column(&b, fmt.Sprint(e.Code), e.Text, 8)
	}
	b.WriteString("\n" + wrap(c.Footer, 78, 0) + "\n")
	return b.String()
}

// commandHelp is `lembas NAME --help`: its forms, what it does, its
// subcommands and flags.
func commandHelp(name string) string {
	c := theCLI()
	cmd := c.command(name)
	if cmd == nil {
		return ""
	}
	var b strings.Builder
	for i, u := range cmd.Usage {
		lead := "usage: "
		if i > 0 {
			lead = "       "
		}
		b.WriteString(lead + c.Name + " " + u + "\n")
	}
	b.WriteString("\n" + wrap(cmd.Summary, 78, 0) + "\n")
	if cmd.Help != "" {
		b.WriteString("\n" + wrap(cmd.Help, 78, 0) + "\n")
	}
	if len(cmd.Subcommands) > 0 {
		b.WriteString("\n")
		for _, s := range cmd.Subcommands {
			column(&b, strings.TrimSpace(s.Name+" "+s.Arg), s.Summary, 24)
		}
	}
	if len(cmd.Flags) > 0 {
		b.WriteString("\nFlags:\n")
		for _, f := range cmd.Flags {
			column(&b, f.flagName(), f.Summary, 24)
		}
	}
	return b.String()
}

// wantsHelp says whether a subcommand's arguments ask for its help: -h,
// -help or --help anywhere before a "--" (after it they are a command's
// words, as in permissions check -- grep --help).
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// unknownCommand decides whether the first word of a run without a
// subcommand is a mistyped command rather than a prompt (the table's
// prompt_rule): a word of lowercase letters, digits and hyphens alone, or
// one within a letter or two of a command's name. It returns the refusal,
// or "" for a prompt.
func unknownCommand(args []string) string {
	if len(args) == 0 {
		return ""
	}
	w := args[0]
	if w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, " \t\n") {
		return "" // a flag, stdin's "-", or a prompt of several words
	}
	lone := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			lone = false
		}
	}
	c := theCLI()
	near := nearestCommands(c, w)
	if !lone && len(near) == 0 {
		return ""
	}
	line := strings.Join(args, " ")
	if len(near) == 0 {
		return c.text("unknown_command_none", "word", w, "commands", strings.Join(c.names(), ", "), "line", line)
	}
	q := make([]string, len(near))
	for i, n := range near {
		q[i] = fmt.Sprintf("%q", c.Name+" "+strings.Join(append([]string{n}, args[1:]...), " "))
	}
	return c.text("unknown_command", "word", w, "suggest", strings.Join(q, " or "), "line", line)
}

// nearestCommands are the commands closest to w in spelling (spell.go).
func nearestCommands(c *cliSpec, w string) []string { return nearestWords(w, c.names()) }

// versionText is --version: the version, the commit and its time from the
// build's VCS stamp (absent in a `go run` or a build outside git), whether
// the tree had changes, and the harness spec (harness_version.go); no other
// harness file is parsed.
func versionText() string {
	s := "lembas " + version
	if bi, ok := debug.ReadBuildInfo(); ok {
		s += buildStamp(bi)
	}
	return s + ", harness spec " + harnessVersion() + "\n"
}

// buildStamp is ", commit 1a2b3c4d5e6f 2026-12-01T20:00:00Z (modified)",
// or the module version `go install …@v1.2.3` stamped when there is no
// VCS stamp, or "".
func buildStamp(bi *debug.BuildInfo) string {
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return ", module " + v
		}
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	s := ", commit " + rev
	if at != "" {
		s += " " + at
	}
	if dirty {
		s += " (modified)"
	}
	return s
}
