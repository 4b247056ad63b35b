package main

// package.json scripts a line runs (boundary.json scripts.package_scripts):
// npm run x, npm test and a plain npm install run the shell lines of the
// project's package.json, which the model may have written a call before,
// as make runs its Makefile's (permission_boundary_make.go). A floor
// refusal in one is the line's; anything else is left as it was.

import (
	"encoding/json"
	"os"
	"strings"
)

type packageScriptsSpec struct {
	About     string              `json:"about"`
	File      string              `json:"file"`
	Commands  map[string][]string `json:"commands"` // the words that run a named script
	Named     map[string]string   `json:"named"`    // subcommands that run a script of their own
	Install   []string            `json:"install"`
	Lifecycle []string            `json:"install_scripts"`
	Reason    string              `json:"reason"`
}

// packageScriptsOf names the package.json scripts a command runs, with
// the pre and post scripts npm runs around a named one; nil for none.
func (b *boundarySpec) packageScriptsOf(c shellCmd) []string {
	ps := &b.Scripts.PackageScripts
	if len(c.Words) == 0 {
		return nil
	}
	run, ok := ps.Commands[commandName(c.Words[0])]
	if !ok {
		return nil
	}
	var ops []string
	for _, a := range c.Words[1:] {
		if a == "--" {
			break // what follows is the script's own arguments
		}
		if !strings.HasPrefix(a, "-") {
			ops = append(ops, a)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	name := ""
	switch {
	case contains(run, ops[0]) && len(ops) > 1:
		name = ops[1]
	case ps.Named[ops[0]] != "":
		name = ps.Named[ops[0]]
	case contains(ps.Install, ops[0]) && len(ops) == 1:
		return ps.Lifecycle
	default:
		return nil
	}
	return []string{"pre" + name, name, "post" + name}
}

// judgePackageScripts is the floor's refusal of a package.json script a
// command runs, if any.
func (p *permissions) judgePackageScripts(b *boundarySpec, c shellCmd, cwd string, env shellEnv) *decision {
	names := b.packageScriptsOf(c)
	if len(names) == 0 {
		return nil
	}
	file := p.pathAt(cwd, b.Scripts.PackageScripts.File)
	st, err := os.Stat(file)
	if err != nil || st.IsDir() || st.Size() > int64(b.Scripts.MaxBytes) {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return nil
	}
	at := env
	at.Cwd = cwd
	for _, n := range names {
		line, ok := pkg.Scripts[n]
		if !ok {
			continue
		}
		if hit, _ := checkHardline(line, at); hit != nil && !hit.Unsure {
			shown := relPath(p.root, file)
			return &decision{Verdict: "deny", Rule: "boundary.json scripts.package_scripts (" + shown + " " + n + "): hardline.json " + hit.Rule,
				Reason: fillPairs(b.Scripts.PackageScripts.Reason, "file", shown, "script", n, "reason", hit.Reason, "command", hit.Command)}
		}
	}
	return nil
}
