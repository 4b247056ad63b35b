//go:build unix

package main

// The REPL once under a real PTY: the real binary on the slave side of a
// pseudo-terminal from pty_unix.go (the one PTY implementation, the one the
// device's terminals use), typed at through the master like a person would.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplUnderPTY(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(textReply("Hi from the PTY."))
	proj := copyProject(t, "basic")
	state := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh", "TERM=xterm-256color",
		"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + t.TempDir()}
	p := startPTYRepl(t, proj, env)
	h, master, out := p.replHarness, p.master, p.out
	h.expect("Do you trust")
	master.Write([]byte("y"))
	h.expect("trusted; remembered")
	h.expect("/help for commands")
	master.Write([]byte("Q"))
	h.expect("Q") // the editor echoes what is typed
	master.Write([]byte("uick hello\r"))
	h.expect("Hi from the PTY.")
	h.expect("openai/mock · 100 in · 10 out · 80 cached")
	h.atPrompt()
	master.Write([]byte{4}) // Ctrl-D at an empty prompt
	// The usage line is drawn as the turn ends, a moment before the REPL is
	// at rest; a Ctrl-D in that moment is refused with a notice (ctrlD), so
	// each refusal seen is answered with another Ctrl-D.
	busy := theReplSpec().Texts["ctrl_d_running"]
	refused := 0
	guardC := time.After(20 * time.Second)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
wait:
	for {
		select {
		case <-master.done:
			if master.code != 0 {
				t.Errorf("lembas ended with status %d; it printed:\n%s", master.code, out.String())
			}
			break wait
		case <-poll.C:
			if n := strings.Count(out.String(), busy); n > refused {
				refused = n
				master.Write([]byte{4})
			}
		case <-guardC:
			master.kill()
			t.Fatalf("Ctrl-D did not end lembas; it printed:\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), "\x1b[") {
		t.Errorf("no colour on a terminal: %q", out.String())
	}
	hist, _ := os.ReadFile(filepath.Join(state, "lembas", "history"))
	if !strings.Contains(string(hist), `"Quick hello"`) {
		t.Errorf("the history was not kept: %q", hist)
	}
}

// TestReplScreenUnderPTY drives the real binary in a PTY with real keys and
// checks the screen a terminal would show (vtscreen_test.go): the prompt
// at column 0 after every turn, typing kept in the input row while an
// answer streams, Ctrl-C cancelling after Ctrl-D, no progress line left
// behind, a card taking only its key, an edited command shown as run.
func TestReplScreenUnderPTY(t *testing.T) {
	fm := newFakeModel(t)
	proj := copyProject(t, "basic")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh", "TERM=xterm-256color", "NO_COLOR=1",
		"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	p := startPTYRepl(t, proj, env)
	h, typ := p.replHarness, p.typ
	// waitRow waits until the cursor's row reads want (a prompt's space
	// cut) with the cursor after it, or after ok when want is empty.
	waitRow := func(want string, ok ...func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			sc := h.screen()
			row := sc.cursorRow()
			end := len([]rune(row))
			if row == "›" {
				end = 2
			}
			if (row == want || len(ok) > 0 && ok[0](row)) && sc.col == end {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cursor's row is %q at column %d, want %q at its end; the screen:\n%s", row, sc.col, want, sc.text())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	h.expect("Do you trust")
	typ("\r") // not an answer: asked again
	h.expect("press y to trust this folder")
	typ("y")
	h.expect("trusted; remembered")
	h.expect("/help for commands")
	waitRow("›")

	fm.push(textReply("Hi from the PTY."))
	typ("quick hello\r")
	h.expect("Hi from the PTY.")
	h.turnDone()
	waitRow("›") // a fresh prompt at column 0 after the turn
	typ("abc")
	waitRow("› abc")
	typ("\x15") // Ctrl-U

	hold := make(chan struct{})
	rep := textReply("First words of a streamed answer that is held half way.")
	rep.hold, rep.holdAt = hold, strings.LastIndex(rep.body[:strings.Index(rep.body, "streamed")], "data: ")
	fm.push(rep)
	typ("stream please\r")
	h.expect("First words of")
	typ("typed meanwhile")
	waitRow("", func(row string) bool {
		return strings.HasPrefix(row, "⋯ ") && strings.HasSuffix(row, "s typed meanwhile")
	})
	for _, row := range strings.Split(h.screen().text(), "\n") {
		if strings.Contains(row, "First words") && strings.Contains(row, "typed") {
			t.Errorf("typing landed in the answer: %q", row)
		}
	}
	typ("\x15\x04") // Ctrl-D at an empty line during a turn: ignored, and said so
	h.expect("Ctrl-C cancels the turn")
	typ("kept")
	typ("\x03") // Ctrl-C still cancels
	h.expect("turn cancelled")
	h.turnDone()
	close(hold)
	waitRow("› kept") // what was typed stays, at a fresh prompt
	if sc := h.screen(); strings.Contains(sc.text(), "⋯") {
		t.Errorf("a progress line was left behind:\n%s", sc.text())
	}
	typ("\x15")

	fm.push(callsReply(fakeCall{"bash", map[string]any{"command": "touch made.txt"}}), textReply("Made it."))
	typ("make a file\r")
	h.expect("n deny · e edit")
	typ("yes\r") // y answers; "es" and Enter are its tail, not a message
	h.expect("Made it.")
	h.turnDone()
	waitRow("›")
	if n := len(fm.got()); n != 4 {
		t.Errorf("%d model requests, want 4: a card's extra keys went to the model", n)
	}

	fm.push(callsReply(fakeCall{"bash", map[string]any{"command": "touch a.txt"}}), textReply("Edited it."))
	typ("another file\r")
	h.expect("n deny · e edit")
	typ("e")
	waitRow("edit the command: touch a.txt") // pre-filled, the cursor at its end
	typ("\x15touch b.txt\r")
	h.expect("$ touch b.txt — edited by you")
	h.expect("Edited it.")
	h.turnDone()
	waitRow("›")
	res := toolResults(fm.got()[len(fm.got())-1])
	if len(res) == 0 || !strings.Contains(res[len(res)-1], "What ran instead: touch b.txt") {
		t.Errorf("the model was not told of the edit: %q", res)
	}
	if _, err := os.Stat(filepath.Join(proj, "b.txt")); err != nil {
		t.Errorf("the edited command did not run: %v", err)
	}

	typ("\x04") // Ctrl-D at an empty prompt quits
	select {
	case <-p.master.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("Ctrl-D did not end lembas:\n%s", h.screen().text())
	}
	waitRow("") // the input row is taken away: the shell's prompt starts a clean row at the left
}
