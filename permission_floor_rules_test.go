package main

import (
	"encoding/json"
	"testing"
)

// The hardline conformance runner: a line (and a home folder) gives the
// floor's verdict.
func init() {
	conformanceRunners["hardline"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Line string  `json:"line"`
			Home *string `json:"home"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		env := shellEnv{Home: "/home/user"}
		if in.Home != nil {
			env.Home = *in.Home
		}
		return hardlineVerdict(in.Line, env), nil
	}
}

// hardlineVerdict is the runner's output for a line.
func hardlineVerdict(line string, env shellEnv) map[string]string {
	hit, err := checkHardline(line, env)
	switch {
	case err != nil:
		return map[string]string{"verdict": "unparsed"}
	case hit != nil && hit.Unsure:
		return map[string]string{"verdict": "unsure", "rule": hit.Rule}
	case hit != nil:
		return map[string]string{"verdict": "refuse", "rule": hit.Rule}
	}
	return map[string]string{"verdict": "pass"}
}

func TestHardlineSpecLoads(t *testing.T) {
	h, err := loadHardline()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range h.Refuse {
		if seen[r.ID] {
			t.Errorf("duplicate rule id %s", r.ID)
		}
		seen[r.ID] = true
	}
	for _, e := range h.Protected.Entries {
		if e.Scope != "shared" && e.Scope != "cli" {
			t.Errorf("protected %s: scope %q, want shared or cli", e.ID, e.Scope)
		}
		if e.Reason == "" {
			t.Errorf("protected %s has no reason", e.ID)
		}
	}
}

func TestHardlineHitFields(t *testing.T) {
	hit, err := checkHardline(`sudo \rm -rf "$HOME"`, shellEnv{Home: "/home/u"})
	if err != nil || hit == nil {
		t.Fatalf("got %v, %v; want a hit", hit, err)
	}
	if hit.Rule != "rm-recursive-system" || hit.Reason == "" || hit.Command != "rm -rf /home/u" {
		t.Errorf("got %+v", *hit)
	}
}

func TestProtectedPath(t *testing.T) {
	project, home := "/work/proj", "/home/u"
	lembas := []string{"/home/u/.config/lembas", "/home/u/.local/state/lembas", "/home/u/.local/share/lembas/token.json"}
	for _, tc := range []struct {
		path, rule string
	}{
		{"/work/proj/.git/hooks/pre-commit", "git-hooks"},
		{"/work/proj/.git/config", "git-config"},
		{"/work/proj/.git/objects/ab/cdef", "git-objects"},
		{"/work/proj/.git/HEAD", "git-objects"},
		{"/work/proj/.git/description", "git-internals"},
		{"/work/proj/vendor/sub/.git/hooks/x", "git-hooks"},
		{"/work/proj/.env", "dotenv"},
		{"/work/proj/app/.env.local", "dotenv"},
		{"/elsewhere/.ENV", "dotenv"},
		{"/work/proj/certs/server.pem", "private-key"},
		{"/work/proj/tls.key", "private-key"},
		{"/work/proj/keys/id_ed25519", "private-key"},
		{"/home/u/.ssh/config", "ssh"},
		{"/home/u/.ssh", "ssh"},
		{"/home/u/.aws/credentials", "cloud-credentials"},
		{"/home/u/.config/gcloud/application_default_credentials.json", "cloud-credentials"},
		{"/home/u/.docker/config.json", "cloud-credentials"},
		{"/home/u/.kube/config", "cloud-credentials"},
		{"/home/u/.netrc", "netrc"},
		{"/home/u/.gnupg/private-keys-v1.d/x.key", "private-key"},
		{"/home/u/.gnupg/pubring.kbx", "gnupg"},
		{"/home/u/.config/lembas/config.yaml", "lembas-own"},
		{"/home/u/.config/lembas", "lembas-own"},
		{"/home/u/.local/share/lembas/token.json", "lembas-own"},
		{"/home/u/.local/state/lembas/sessions/1.jsonl", "lembas-own"},
		{"/work/proj/a/../.git/config", "git-config"},
		{"/work/proj/main.go", ""},
		{"/work/proj/.env.example", ""},
		{"/work/proj/keys/id_ed25519.pub", ""},
		{"/work/proj/.gitignore", ""},
		{"/work/proj/.github/workflows/ci.yml", ""},
		{"/home/u/.config/other/x", ""},
		{"/home/u/.kube/cache/x", ""},
		{"/other/.git/config", ""},
		{"/work/proj/docs/keyboard.md", ""},
		{"/home/u/.config/lembasx/y", ""},
	} {
		rule, ok := protectedPath(tc.path, project, home, lembas)
		if ok != (tc.rule != "") || rule != tc.rule {
			t.Errorf("protectedPath(%q) = %q, %v; want %q", tc.path, rule, ok, tc.rule)
		}
	}
}

// BenchmarkCheckHardline measures the floor on a typical three-part chain.
func BenchmarkCheckHardline(b *testing.B) {
	env := shellEnv{Home: "/home/u"}
	line := `cd /work/proj && go test ./... 2>&1 | tail -n 20`
	if _, err := checkHardline(line, env); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if hit, err := checkHardline(line, env); hit != nil || err != nil {
			b.Fatal(hit, err)
		}
	}
}
