package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestGitConfigNamedAsked: the file tools, which run outside any
// sandbox, ask before writing what the repository's git config names for
// git to run (husky's hooks folder, a textconv's script, an include),
// (refused in -p); a plain project file next to them is written unasked.
func TestGitConfigNamedAsked(t *testing.T) {
	proj := evalExisting(t.TempDir())
	git(t, proj, "init", "-q", ".")
	git(t, proj, "config", "core.hooksPath", ".husky")
	git(t, proj, "config", "diff.conv.textconv", "python3 scripts/conv.py")
	git(t, proj, "config", "include.path", "../shared.gitconfig")
	os.MkdirAll(filepath.Join(proj, "scripts"), 0o755)
	os.WriteFile(filepath.Join(proj, "scripts/conv.py"), nil, 0o644)
	write := theSpec().Tools["write"]
	for path, want := range map[string]string{".husky/pre-commit": "ask", "scripts/conv.py": "ask", "shared.gitconfig": "ask", "scripts/other.py": "allow", "main.go": "allow"} {
		p := permissionsFor("auto", proj, true, &config{})
		raw, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		if d := p.decide(write, raw); d.Verdict != want {
			t.Errorf("write %s in auto: %s (%s), want %s", path, d.Verdict, d.Reason, want)
		}
	}
}
