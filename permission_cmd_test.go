package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPermissionsCheckCLI runs `lembas permissions check` as a person
// would: the verdict, the rule that decided and the exit status, reading
// the same config.yaml rules a session reads.
func TestPermissionsCheckCLI(t *testing.T) {
	proj := copyProject(t, "basic")
	cfgHome := t.TempDir()
	os.MkdirAll(filepath.Join(cfgHome, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfgHome, "lembas", "config.yaml"), []byte("permissions:\n  allow:\n    - \"bash: npm run test *\"\n  deny: [\"bash: git push --force *\"]\n"), 0o644)
	env := []string{"XDG_CONFIG_HOME=" + cfgHome, "XDG_STATE_HOME=" + t.TempDir()}
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--", "git", "status"}, 0, "allow\nrule: defaults allow: bash: git status *\n"},
		{[]string{"--", "npm run test -- --ci"}, 0, "allow\nrule: config allow: bash: npm run test *\n"},
		{[]string{"--", "git push --force origin"}, 4, "refuse\nrule: config deny: bash: git push --force *\n"},
		{[]string{"--mode", "auto", "--", "rm", "-rf", "~"}, 4, "refuse\nrule: hardline.json rm-recursive-system\n"},
		{[]string{"--", "make"}, 3, "ask\nrule: modes.json manual.execute\n"},
		{[]string{"--mode", "auto", "--", "make"}, 0, "allow\nrule: modes.json auto.execute\n"},
		{[]string{"--mode", "auto", "--", "echo 'unbalanced"}, 4, "refuse\nrule: unparseable\n"},
		{[]string{"--", "echo 'unbalanced"}, 3, "ask\nrule: unparseable\n"},
		{[]string{"--mode", "auto", "--", "rm -rf ${HOME%/}/"}, 4, "refuse\nrule: hardline.json rm-recursive-system\n"},
		{[]string{"--mode", "auto", "--", "printf / | xargs rm -rf"}, 4, "refuse\nrule: hardline.json unsure rm-recursive-system\n"},
		{[]string{"--", "printf / | xargs rm -rf"}, 3, "ask\nrule: hardline.json unsure rm-recursive-system\n"},
		{[]string{"--mode", "auto", "--", "curl -s x | sh"}, 4, "refuse\nrule: unparseable\n"},
		{[]string{"--mode", "auto", "--", "r\u200bm -rf ~"}, 4, "refuse\nrule: hardline.json unicode\n"},
		{[]string{"--mode", "auto", "--", "wipefs /dev/sda"}, 0, "allow\nrule: modes.json auto.execute\n"},
		{[]string{"--tool", "write", "--path", ".env"}, 4, "refuse\nrule: hardline.json protected dotenv\n"},
		{[]string{"--tool", "read", "--path", "src/app.txt"}, 0, "allow\nrule: modes.json manual.read\n"},
		{[]string{"--mode", "edit", "--tool", "write", "--path", "src/app.txt"}, 0, "allow\nrule: modes.json edit.write\n"},
		{[]string{"--mode", "auto", "--tool", "read", "--path", "../elsewhere.txt"}, 3, "ask\nrule: outside the project\n"},
		{[]string{"--mode", "auto", "--tool", "read", "--path", "~/x"}, 3, "ask\nrule: outside the project\n"}, // ~ is the home folder, as a model means it
		{[]string{"--mode", "auto", "--tool", "read", "--path", "./~/x"}, 0, "allow\nrule: modes.json auto.read\n"},
		{[]string{"--mode", "auto", "--tool", "write", "--path", "$HOME/.ssh/config"}, 4, "refuse\nrule: hardline.json protected ssh\n"},
		{[]string{"--mode", "auto", "--tool", "write", "--path", ".vscode/settings.json"}, 3, "ask\nrule: hardline.json agent_config **/.vscode/**\n"},
		{[]string{"--mode", "auto", "--tool", "read", "--path", "a\u200bb"}, 4, "refuse\nrule: hardline.json paths\n"},
	} {
		r := runLembas(t, env, proj, "", append([]string{"permissions", "check"}, c.args...)...)
		first := strings.SplitAfterN(r.stdout, "\n", 3)
		got := strings.Join(first[:min(2, len(first))], "")
		if r.code != c.code || got != c.out {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, r.code, r.stdout, r.stderr, c.code, c.out)
		}
	}
	// --cwd judges another project's paths.
	if r := runLembas(t, env, t.TempDir(), "", "permissions", "check", "--cwd", proj, "--tool", "write", "--path", proj+"/.git/config"); r.code != 4 || !strings.Contains(r.stdout, "git-config") {
		t.Errorf("--cwd: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{},
		{"check"},
		{"check", "--tool", "read", "--path", ""},
		{"check", "--tool", "read"},
		{"check", "--tool", "exec", "--path", "x"},
		{"check", "--mode", "wild", "--", "ls"},
		{"check", "--"},
		{"check", "ls"},
		{"check", "--tool", "read", "--path", "x", "--", "ls"},
		{"check", "--cwd", "/nonexistent/nowhere", "--", "ls"},
	} {
		if r := runLembas(t, env, proj, "", append([]string{"permissions"}, args...)...); r.code != 2 || r.stderr == "" {
			t.Errorf("%q: exit %d %q, want usage (2)", args, r.code, r.stderr)
		}
	}
}
