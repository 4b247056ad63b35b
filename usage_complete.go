package main

// usage_complete.go: `lembas completion bash|zsh|fish`, scripts written
// from the command-line table (harness/commands_cli.json), so a command or
// flag --help names is one the shell completes. What changes from machine
// to machine — session ids, model refs, config keys — the scripts ask for
// with `lembas completion --list KIND`, which reads the state folder and
// config.yaml only: a completion never probes a model server.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// cmdCompletion is `lembas completion`.
func cmdCompletion(args []string, stdout io.Writer) error {
	c := theCLI()
	if len(args) == 2 && args[0] == "--list" {
		words, err := completionList(args[1])
		if err != nil {
			return err
		}
		for _, w := range words {
			fmt.Fprintln(stdout, w)
		}
		return nil
	}
	if len(args) != 1 {
		return usageError{c.text("completion_usage")}
	}
	var script string
	switch args[0] {
	case "bash":
		script = bashCompletion(c)
	case "zsh":
		script = zshCompletion(c)
	case "fish":
		script = fishCompletion(c)
	default:
		return usageError{fmt.Sprintf("completion: no script for %q; %s", args[0], c.text("completion_usage"))}
	}
	fmt.Fprint(stdout, script)
	return nil
}

// completionList is what --list KIND prints: the stored session ids
// (newest first), the model refs config.yaml names, or config keys.
func completionList(kind string) ([]string, error) {
	switch kind {
	case "sessions":
		names, _ := filepath.Glob(filepath.Join(stateDir(), "sessions", "*.json*"))
		type idAt struct {
			id string
			at int64
		}
		var ids []idAt
		seen := map[string]bool{}
		for _, n := range names {
			base := filepath.Base(n)
			id := strings.TrimSuffix(strings.TrimSuffix(base, ".jsonl"), ".json")
			if id == base || seen[id] || !validID(id) {
				continue
			}
			seen[id] = true
			var at int64
			if fi, err := os.Stat(n); err == nil {
				at = fi.ModTime().UnixNano()
			}
			ids = append(ids, idAt{id, at})
		}
		sort.SliceStable(ids, func(i, j int) bool { return ids[i].at > ids[j].at })
		out := make([]string, len(ids))
		for i, x := range ids {
			out[i] = x.id
		}
		return out, nil
	case "models":
		cfg, err := loadConfig()
		if err != nil {
			return nil, nil // a broken config completes nothing; the command itself will say why
		}
		var out []string
		for _, cc := range cfg.Connections {
			for _, m := range cc.Models {
				out = append(out, cc.Name+"/"+m.Name)
			}
		}
		return out, nil
	case "config_keys":
		out := append([]string(nil), theConfigKeys().TopKeys...)
		if data, err := os.ReadFile(configPath()); err == nil {
			if root, err := parseYAMLNode(data, configPath()); err == nil {
				walkLeaves(root, "", func(key string, _ *yamlNode) { out = append(out, key) })
			}
		}
		return out, nil
	}
	return nil, usageError{theCLI().text("completion_list_usage")}
}

// flagWords are a flag list's spellings, long and short.
//
//go:noinline
func flagWords(fs []cliFlag) []string {
	var out []string
	for _, f := range fs {
		out = append(out, "--"+f.Long)
		if f.Short != "" {
			out = append(out, "-"+f.Short)
		}
	}
	return out
}

//go:noinline
func subNames(cmd cliCommand) []string {
	var out []string
	for _, s := range cmd.Subcommands {
		out = append(out, s.Name)
	}
	return out
}

// argKinds groups a command's subcommands by what their argument
// completes to: kind → subcommand names.
func argKinds(cmd cliCommand) map[string][]string {
	out := map[string][]string{}
	for _, s := range cmd.Subcommands {
		if s.Complete != "" {
			out[s.Complete] = append(out[s.Complete], s.Name)
		}
	}
	return out
}

func kindNames(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// visible are the commands a person is shown.
//
//go:noinline
func visible(c *cliSpec) []cliCommand {
	var out []cliCommand
	for _, cmd := range c.Commands {
		if !cmd.Hidden {
			out = append(out, cmd)
		}
	}
	return out
}

// kindCase writes, for bash and zsh alike, a case on the subcommand word
// (subject, as the shell spells it) with an arm per argument kind of cmd's
// subcommands, each running words(kind); nothing when none takes one.
func kindCase(b *strings.Builder, cmd cliCommand, subject string, words func(kind string) string) {
	kinds := argKinds(cmd)
	if len(kinds) == 0 {
		return
	}
	fmt.Fprintf(b, "\t\tcase \"%s\" in\n", subject)
	for _, k := range kindNames(kinds) {
		fmt.Fprintf(b, "\t\t%s) %s ;;\n", strings.Join(kinds[k], "|"), words(k))
	}
	b.WriteString("\t\tesac\n")
}

// bashWords is what a bash script runs to fill COMPREPLY for a kind.
func bashWords(kind string) string {
	switch kind {
	case "dirs":
		return `COMPREPLY=($(compgen -d -- "$cur"))`
	case "files":
		return `COMPREPLY=($(compgen -f -- "$cur"))`
	}
	return `COMPREPLY=($(compgen -W "$(_lembas_list ` + kind + `)" -- "$cur"))`
}

func bashCompletion(c *cliSpec) string {
	var b strings.Builder
	b.WriteString("# bash completion for lembas: source <(lembas completion bash)\n")
	b.WriteString("# Written by `lembas completion bash` from harness/commands_cli.json.\n")
	b.WriteString("_lembas_list() { \"${COMP_WORDS[0]}\" completion --list \"$1\" 2>/dev/null; }\n\n")
	b.WriteString("_lembas() {\n")
	b.WriteString("\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=\n")
	b.WriteString("\t[ \"$COMP_CWORD\" -gt 1 ] && cmd=${COMP_WORDS[1]}\n")
	b.WriteString("\tCOMPREPLY=()\n")
	// A flag's value: the command's own flags first, then the main ones.
	b.WriteString("\tcase \"$cmd:$prev\" in\n")
	valueArm := func(pat string, f cliFlag) {
		switch {
		case len(f.Values) > 0:
			fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", pat, strings.Join(f.Values, " "))
		case f.Complete != "":
			fmt.Fprintf(&b, "\t%s) %s; return ;;\n", pat, bashWords(f.Complete))
		default:
			fmt.Fprintf(&b, "\t%s) return ;;\n", pat)
		}
	}
	eachValueFlag(c, valueArm)
	b.WriteString("\tesac\n")
	names := commandNames(c)
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tcase \"$cur\" in\n\t\t-*) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n\t\t*) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n\t\tesac\n\t\treturn\n\tfi\n",
		strings.Join(flagWords(c.Flags), " "), strings.Join(names, " "))
	b.WriteString("\tcase \"$cmd\" in\n")
	for _, cmd := range visible(c) {
		flags := strings.Join(flagWords(cmd.Flags), " ")
		fmt.Fprintf(&b, "\t%s)\n", cmd.Name)
		fmt.Fprintf(&b, "\t\tcase \"$cur\" in -*) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;; esac\n", flags)
		if len(cmd.Subcommands) > 0 {
			fmt.Fprintf(&b, "\t\tif [ \"$COMP_CWORD\" -eq 2 ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(subNames(cmd), " "))
			kindCase(&b, cmd, "${COMP_WORDS[2]}", bashWords)
		} else if cmd.Args != "" {
			fmt.Fprintf(&b, "\t\t%s\n", bashWords(cmd.Args))
		}
		b.WriteString("\t\t;;\n")
	}
	fmt.Fprintf(&b, "\t*) case \"$cur\" in -*) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;; esac ;;\n", strings.Join(flagWords(c.Flags), " "))
	b.WriteString("\tesac\n}\n\ncomplete -F _lembas lembas\n")
	return b.String()
}

// zshWords is what a zsh script runs to offer a kind's words.
func zshWords(kind string) string {
	switch kind {
	case "dirs":
		return "_files -/"
	case "files":
		return "_files"
	}
	return "compadd -- ${(f)\"$(_lembas_list " + kind + ")\"}"
}

// zshQuote quotes a word list for compadd.
func zshQuote(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func zshCompletion(c *cliSpec) string {
	var b strings.Builder
	b.WriteString("#compdef lembas\n")
	b.WriteString("# zsh completion for lembas: lembas completion zsh > \"${fpath[1]}/_lembas\", or source it after compinit.\n")
	b.WriteString("# Written by `lembas completion zsh` from harness/commands_cli.json.\n")
	b.WriteString("_lembas_list() { \"$words[1]\" completion --list \"$1\" 2>/dev/null }\n\n")
	b.WriteString("_lembas() {\n")
	b.WriteString("\tlocal cur=$words[CURRENT] prev=$words[CURRENT-1] cmd=\n")
	b.WriteString("\t(( CURRENT > 2 )) && cmd=$words[2]\n")
	b.WriteString("\tcase \"$cmd:$prev\" in\n")
	valueArm := func(pat string, f cliFlag) {
		switch {
		case len(f.Values) > 0:
			fmt.Fprintf(&b, "\t%s) compadd -- %s; return ;;\n", pat, zshQuote(f.Values))
		case f.Complete != "":
			fmt.Fprintf(&b, "\t%s) %s; return ;;\n", pat, zshWords(f.Complete))
		default:
			fmt.Fprintf(&b, "\t%s) return ;;\n", pat)
		}
	}
	eachValueFlag(c, valueArm)
	b.WriteString("\tesac\n")
	names := commandNames(c)
	fmt.Fprintf(&b, "\tif (( CURRENT == 2 )); then\n\t\tif [[ $cur == -* ]]; then compadd -- %s; else compadd -- %s; fi\n\t\treturn\n\tfi\n",
		zshQuote(flagWords(c.Flags)), zshQuote(names))
	b.WriteString("\tcase \"$cmd\" in\n")
	for _, cmd := range visible(c) {
		fmt.Fprintf(&b, "\t%s)\n", cmd.Name)
		if fl := flagWords(cmd.Flags); len(fl) > 0 {
			fmt.Fprintf(&b, "\t\tif [[ $cur == -* ]]; then compadd -- %s; return; fi\n", zshQuote(fl))
		}
		if len(cmd.Subcommands) > 0 {
			fmt.Fprintf(&b, "\t\tif (( CURRENT == 3 )); then compadd -- %s; return; fi\n", zshQuote(subNames(cmd)))
			kindCase(&b, cmd, "$words[3]", zshWords)
		} else if cmd.Args != "" {
			fmt.Fprintf(&b, "\t\t%s\n", zshWords(cmd.Args))
		}
		b.WriteString("\t\t;;\n")
	}
	fmt.Fprintf(&b, "\t*) [[ $cur == -* ]] && compadd -- %s ;;\n", zshQuote(flagWords(c.Flags)))
	b.WriteString("\tesac\n}\n\n")
	b.WriteString("if [[ $funcstack[1] == _lembas ]]; then\n\t_lembas \"$@\"\nelif (( $+functions[compdef] )); then\n\tcompdef _lembas lembas\nfi\n")
	return b.String()
}

// fishFirstSentence keeps a description short, as fish lists show it.
func fishFirstSentence(s string) string {
	if i := strings.IndexAny(s, ":;("); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func fishCompletion(c *cliSpec) string {
	names := commandNames(c)
	var b strings.Builder
	b.WriteString("# fish completion for lembas: lembas completion fish > ~/.config/fish/completions/lembas.fish\n")
	b.WriteString("# Written by `lembas completion fish` from harness/commands_cli.json.\n")
	b.WriteString("function __lembas_list\n\tset -l w (commandline -opc)\n\t$w[1] completion --list $argv[1] 2>/dev/null\nend\n")
	// __lembas_at N CMD SUBS: N words typed before the cursor, the first
	// after lembas is CMD (any when empty), the second one of SUBS.
	b.WriteString("function __lembas_at\n\tset -l w (commandline -opc)\n\ttest (count $w) -eq $argv[1]; or return 1\n" +
		"\tif test (count $argv) -ge 2; and test -n \"$argv[2]\"; test \"$w[2]\" = \"$argv[2]\"; or return 1; end\n" +
		"\tif test (count $argv) -ge 3; contains -- \"$w[3]\" (string split ' ' -- $argv[3]); or return 1; end\n\treturn 0\nend\n")
	// __lembas_in CMD: the line's command is CMD; "" is a run (no command).
	fmt.Fprintf(&b, "function __lembas_in\n\tset -l w (commandline -opc)\n\tif test -z \"$argv[1]\"\n\t\ttest (count $w) -lt 2; and return 0\n\t\tnot contains -- \"$w[2]\" %s\n\telse\n\t\ttest (count $w) -ge 2; and test \"$w[2]\" = \"$argv[1]\"\n\tend\nend\n",
		strings.Join(names, " "))
	b.WriteString("complete -c lembas -f\n")
	for _, cmd := range visible(c) {
		fmt.Fprintf(&b, "complete -c lembas -n '__lembas_at 1' -a %s -d %s\n", cmd.Name, fishQuote(fishFirstSentence(cmd.Summary)))
	}
	fishArg := func(kind string) string {
		switch kind {
		case "dirs":
			return "-a '(__fish_complete_directories)'"
		case "files":
			return "-F"
		}
		return "-a '(__lembas_list " + kind + ")'"
	}
	flagLine := func(cond string, f cliFlag) {
		fmt.Fprintf(&b, "complete -c lembas -n %s", fishQuote(cond))
		if f.Short != "" {
			fmt.Fprintf(&b, " -s %s", f.Short)
		}
		fmt.Fprintf(&b, " -l %s", f.Long)
		switch {
		case len(f.Values) > 0:
			fmt.Fprintf(&b, " -x -a %s", fishQuote(strings.Join(f.Values, " ")))
		case f.Complete == "files":
			b.WriteString(" -r -F")
		case f.Complete != "":
			fmt.Fprintf(&b, " -x %s", fishArg(f.Complete))
		case f.Value != "":
			b.WriteString(" -x")
		}
		fmt.Fprintf(&b, " -d %s\n", fishQuote(fishFirstSentence(f.Summary)))
	}
	for _, f := range c.Flags {
		flagLine("__lembas_in ''", f)
	}
	for _, cmd := range visible(c) {
		for _, s := range cmd.Subcommands {
			fmt.Fprintf(&b, "complete -c lembas -n '__lembas_at 2 %s' -a %s -d %s\n", cmd.Name, s.Name, fishQuote(fishFirstSentence(s.Summary)))
		}
		kinds := argKinds(cmd)
		for _, k := range kindNames(kinds) {
			fmt.Fprintf(&b, "complete -c lembas -n '__lembas_at 3 %s \"%s\"' %s\n", cmd.Name, strings.Join(kinds[k], " "), fishArg(k))
		}
		if len(cmd.Subcommands) == 0 && cmd.Args != "" {
			fmt.Fprintf(&b, "complete -c lembas -n '__lembas_in %s' %s\n", cmd.Name, fishArg(cmd.Args))
		}
		for _, f := range cmd.Flags {
			flagLine("__lembas_in "+cmd.Name, f)
		}
	}
	return b.String()
}

// eachValueFlag calls arm for every flag that takes a value, as the shells'
// case patterns name it: a command's own flags ("name:--flag") first, then
// the main ones ("*:--flag").
func eachValueFlag(c *cliSpec, arm func(pat string, f cliFlag)) {
	for _, cmd := range visible(c) {
		for _, f := range cmd.Flags {
			if f.Value != "" {
				arm(cmd.Name+":--"+f.Long, f)
			}
		}
	}
	for _, f := range c.Flags {
		if f.Value != "" {
			arm("*:--"+f.Long, f)
		}
	}
}

// commandNames are the subcommands a completion offers.
//
//go:noinline
func commandNames(c *cliSpec) []string {
	var names []string
	for _, cmd := range visible(c) {
		names = append(names, cmd.Name)
	}
	return names
}
