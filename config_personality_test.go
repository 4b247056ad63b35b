package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestConfigSetWritesBack: `lembas config set` of a personalization key,
// logged in to one instance that has personalization, writes config.yaml
// and PUTs that one field with enabled: true; a refusal is said with the
// instance's detail, config.yaml keeping the value; another key sends
// nothing.
func TestConfigSetWritesBack(t *testing.T) {
	e := newLinkEnv(t, "")
	var out, errOut bytes.Buffer
	if code := run([]string{"config", "set", "instructions", "Be brief."}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	e.fi.mu.Lock()
	puts := append([]string{}, e.fi.puts...)
	e.fi.mu.Unlock()
	if len(puts) != 1 || puts[0] != `{"enabled":true,"instructions":"Be brief."}` {
		t.Errorf("PUTs %v", puts)
	}
	if !strings.Contains(out.String(), "instructions written to test as well") {
		t.Errorf("said %q", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"config", "set", "instructions", "forbidden"}, strings.NewReader(""), &out, &errOut); code == 0 ||
		!strings.Contains(errOut.String(), "personalization is not available on this instance") {
		t.Errorf("a 403: exit %d, said %q", code, errOut.String())
	}
	if b, _ := os.ReadFile(configPath()); !strings.Contains(string(b), "instructions: forbidden") {
		t.Errorf("config.yaml lost the value:\n%s", b)
	}
	if code := run([]string{"config", "set", "mode", "edit"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("mode: %s", errOut.String())
	}
	e.fi.mu.Lock()
	n := len(e.fi.puts)
	e.fi.mu.Unlock()
	if n != 2 {
		t.Errorf("%d PUTs after setting mode, want 2", n)
	}
	if code := run([]string{"config", "set", "personality", "pirate"}, strings.NewReader(""), &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "not a preset") {
		t.Errorf("an unknown preset: exit %d, %q", code, errOut.String())
	}
}

// TestModelsListsChatModels: lembas models lists an instance's chat models
// (and those of no kind), names its embedding model on a line of its own,
// and leaves the other kinds out.
func TestModelsListsChatModels(t *testing.T) {
	newLinkEnv(t, "")
	var out, errOut bytes.Buffer
	if code := run([]string{"models"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := out.String()
	for _, want := range []string{"test/acme/chat-1\t", "test/plain-2\t", "test/acme/embed-1\t" + "login: the embedding model"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "acme/tts") || strings.Count(got, "embed-1") != 1 {
		t.Errorf("a model of another kind listed:\n%s", got)
	}
}

// TestModelNotes: models/schema.json's notes are read for the first entry
// that matches, as the rest of the metadata is.
func TestModelNotes(t *testing.T) {
	if n := modelNotes("Qwen3-8B"); n == "" || !strings.Contains(n, "thinking-default") {
		t.Errorf("qwen3's notes %q", n)
	}
	if n := modelNotes("llama-3.1-8b"); n != "" {
		t.Errorf("llama's notes %q", n)
	}
}
