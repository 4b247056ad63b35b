package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCardEditDiff: the card of an edit that cannot apply says so and
// shows no made-up diff; a new file's diff starts at /dev/null; a file
// outside the project keeps its absolute path in the headers; the reason
// is a sentence with the rule after it.
func TestCardEditDiff(t *testing.T) {
	tb := newTestToolbox(t, map[string]string{"a.txt": "hello\n"})
	p := newPermissions("manual", tb.root, false)
	ask := func(tool string, args map[string]any) approvalRequest {
		raw, _ := json.Marshal(args)
		return p.request("c1", tb.byName[tool], raw, p.decide(tb.byName[tool], raw))
	}
	r := ask("edit", map[string]any{"path": "a.txt", "old_string": "nothere", "new_string": "x"})
	if !strings.Contains(r.Diff, "cannot apply") || strings.Contains(r.Diff, "@@") || strings.Contains(r.Diff, "-nothere") {
		t.Errorf("a failing edit's card:\n%s", r.Diff)
	}
	if !strings.HasPrefix(r.Reason, "manual mode asks before changing files.") || !strings.HasSuffix(r.Reason, "(rule: modes.json manual.write)") {
		t.Errorf("reason %q", r.Reason)
	}
	r = ask("write", map[string]any{"path": "new.txt", "content": "x\n"})
	if !strings.HasPrefix(r.Diff, "--- /dev/null\n+++ b/new.txt\n") {
		t.Errorf("a new file's diff:\n%s", r.Diff)
	}
	out := filepath.Join(t.TempDir(), "o.txt")
	if d := unifiedDiff(out, "a\n", "b\n"); !strings.HasPrefix(d, "--- "+out+"\n+++ "+out+"\n") {
		t.Errorf("an outside file's headers:\n%s", d)
	}
}
