package main

// Errors that say what happened (issue 21): a hung server abandoned after
// idle_timeout with a notice first, a context-length refusal with its
// numbers and what to do, retries that count and a body shown once, a
// base URL without a scheme, a prompt larger than the window.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHeadlessHungServer(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfg, "lembas", "config.yaml"), []byte("idle_timeout: 2\n"), 0o644)
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfg}
	r := runLembas(t, env, copyProject(t, "basic"), "", "-p", "hello")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	quiet := strings.Index(r.stderr, "has sent nothing for 1 s; still waiting")
	gave := strings.Index(r.stderr, "sent nothing for 2 s, so lembas gave up")
	if quiet < 0 || gave < quiet {
		t.Errorf("want a waiting notice, then the sentence giving up:\n%s", r.stderr)
	}
}

func TestModelContextLength(t *testing.T) {
	f := newFakeModel(t)
	f.push(fakeReply{status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`})
	_, err := testRef(f.url()).stream(context.Background(), &chatRequest{}, nil, nil, nil)
	var me *modelError
	if !errors.As(err, &me) || me.Kind != "context_length" {
		t.Fatalf("got %v", err)
	}
	for _, w := range []string{"8192 tokens", "9500 tokens", "/compact", "@path:10-80"} {
		if !strings.Contains(me.Msg, w) {
			t.Errorf("%q does not say %q", me.Msg, w)
		}
	}
	if strings.Contains(me.Msg, "does not serve") {
		t.Errorf("a context-length refusal read as an unknown model: %q", me.Msg)
	}
}

func TestHeadlessRetriesShowBodyOnce(t *testing.T) {
	f := newFakeModel(t)
	page := "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"
	n := theSpec().Loop.Retry.Attempts
	for i := 0; i < n; i++ {
		f.push(fakeReply{status: 502, body: page})
	}
	env := []string{"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	r := runLembas(t, env, copyProject(t, "basic"), "", "-p", "hello")
	if r.code != 1 || strings.Count(r.stderr, "502 Bad Gateway") != 1 || strings.Contains(r.stderr, "<") {
		t.Errorf("exit %d; want the page's words once, no markup:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	for i, l := range lines[:len(lines)-1] {
		if want := fmt.Sprintf("retrying (%d of %d)", i+2, n); !strings.Contains(l, want) || strings.Contains(l, "tries") {
			t.Errorf("retry line %q, want %q and no count of tries", l, want)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, fmt.Sprintf("every time, %d tries in all", n)) {
		t.Errorf("the final failure %q", last)
	}
}

func TestHeadlessBaseURLWithoutScheme(t *testing.T) {
	f := newFakeModel(t)
	f.push(textReply("Reached."))
	env := []string{"OPENAI_BASE_URL=" + strings.TrimPrefix(f.url(), "http://"), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	if r := runLembas(t, env, copyProject(t, "basic"), "", "-p", "hello"); r.code != 0 || !strings.Contains(r.stdout, "Reached.") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := strings.TrimPrefix(srv.URL, "http://") + "/v1"
	srv.Close()
	env = []string{"OPENAI_BASE_URL=" + dead, "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	r := runLembas(t, env, copyProject(t, "basic"), "", "-p", "hello")
	if r.code == 0 || !strings.Contains(r.stderr, "Nothing answers at http://"+dead) {
		t.Errorf("a dead address: exit %d\n%s", r.code, r.stderr)
	}
}

func TestPromptOverWindowNotSent(t *testing.T) {
	f := newFakeModel(t)
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfg, "lembas", "config.yaml"), []byte("connections:\n  small:\n    base_url: "+f.url()+"\n    models:\n      - name: mock\n        context: 1000\n"), 0o644)
	env := []string{"LEMBAS_MODEL=small/mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfg}
	r := runLembas(t, env, copyProject(t, "basic"), "", "-p", strings.Repeat("word ", 2000))
	if r.code != 1 || len(f.got()) != 0 || !strings.Contains(r.stderr, "about 2500 tokens") || !strings.Contains(r.stderr, "1000 tokens") {
		t.Errorf("exit %d, %d requests:\n%s", r.code, len(f.got()), r.stderr)
	}
}

// TestContinueFallsBackWhenConnectionGone: -c of a session whose
// connection (the environment's) is gone goes on with the configured
// model, and says so.
func TestContinueFallsBackWhenConnectionGone(t *testing.T) {
	f1 := newFakeModel(t)
	f1.push(textReply("First."))
	proj := copyProject(t, "basic")
	st := t.TempDir()
	env := []string{"OPENAI_BASE_URL=" + f1.url(), "XDG_STATE_HOME=" + st, "XDG_CONFIG_HOME=" + t.TempDir()}
	if r := runLembas(t, env, proj, "", "-p", "hello"); r.code != 0 {
		t.Fatalf("first run: %d %s", r.code, r.stderr)
	}
	f2 := newFakeModel(t)
	f2.push(textReply("Second."))
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "lembas"), 0o755)
	os.WriteFile(filepath.Join(cfg, "lembas", "config.yaml"), []byte("connections:\n  local:\n    base_url: "+f2.url()+"\n"), 0o644)
	env = []string{"XDG_STATE_HOME=" + st, "XDG_CONFIG_HOME=" + cfg}
	r := runLembas(t, env, proj, "", "-c", "-p", "again")
	if r.code != 0 || !strings.Contains(r.stdout, "Second.") || !strings.Contains(r.stderr, "this session used openai/mock") || !strings.Contains(r.stderr, "goes on with local/mock") {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
