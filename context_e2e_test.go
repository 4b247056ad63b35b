package main

// The real binary: --effort sends what the level says or is refused with
// the model's levels; lembas -c goes on with the stored dedupe table; and
// LEMBAS_HYGIENE=off sends re-reads whole.

import (
	"strings"
	"testing"
)

func TestEndToEndEffort(t *testing.T) {
	f := newFakeModel(t, "qwen3-8b")
	proj := copyProject(t, "basic")
	env := []string{"OPENAI_BASE_URL=" + f.url(), "OPENAI_API_KEY=x", "LEMBAS_MODEL=qwen3-8b",
		"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	r := runLembas(t, env, proj, "", "--effort", "high", "-p", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "openai/qwen3-8b has no effort level high; its levels are: off.") {
		t.Errorf("a wrong level: %d %q", r.code, r.stderr)
	}
	f.push(textReply("Off."), textReply("Plain."))
	r = runLembas(t, env, proj, "", "--effort", "off", "-p", "hi")
	if r.code != 0 {
		t.Fatalf("--effort off: %d %s", r.code, r.stderr)
	}
	r = runLembas(t, env, proj, "", "-p", "hi")
	reqs := f.got()
	if !strings.Contains(string(reqs[0].Raw), `"chat_template_kwargs":{"enable_thinking":false}`) || strings.Contains(string(reqs[0].Raw), "reasoning_effort") {
		t.Errorf("--effort off sent %s", reqs[0].Raw)
	}
	if strings.Contains(string(reqs[1].Raw), "chat_template_kwargs") {
		t.Errorf("no level sent %s", reqs[1].Raw)
	}
}

func TestEndToEndDedupeAcrossContinue(t *testing.T) {
	for _, hyg := range []string{"", "off"} {
		f := newFakeModel(t)
		proj := copyProject(t, "basic")
		env := []string{"OPENAI_BASE_URL=" + f.url(), "OPENAI_API_KEY=x", "LEMBAS_MODEL=mock",
			"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "LEMBAS_HYGIENE=" + hyg}
		f.push(callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}), textReply("Read."))
		if r := runLembas(t, env, proj, "", "-p", "read src/app.txt"); r.code != 0 {
			t.Fatalf("first run: %d %s", r.code, r.stderr)
		}
		f.push(callsReply(fakeCall{"read", map[string]any{"path": "src/app.txt"}}), textReply("Again."))
		if r := runLembas(t, env, proj, "", "-c", "-p", "read it again"); r.code != 0 {
			t.Fatalf("-c run: %d %s", r.code, r.stderr)
		}
		res := toolResults(f.got()[3])
		stub := strings.Contains(res[1], "unchanged since #0001")
		if stub != (hyg == "") {
			t.Errorf("LEMBAS_HYGIENE=%q: the re-read after -c is %q", hyg, res[1])
		}
	}
}
