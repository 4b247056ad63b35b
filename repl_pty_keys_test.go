//go:build unix

package main

// More of the REPL under a real PTY, checked on the screen model
// (vtscreen_test.go): Ctrl-C at the trust question, cancelling with lines
// queued, a long notice wrapped at words, and wide characters in the input
// row.

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ptyRepl is the real binary in a PTY of 100×24, typed at like a person.
type ptyRepl struct {
	*replHarness
	master *ptyProc
}

func startPTYRepl(t *testing.T, proj string, env []string) *ptyRepl {
	t.Helper()
	bin := lembasBin(t)
	master, err := startPTY(bin, []string{bin}, proj, env, 100, 24)
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	t.Cleanup(func() { master.kill(); master.close() })
	out := newSyncBuffer()
	go io.Copy(out, master)
	return &ptyRepl{replHarness: &replHarness{t: t, out: out, tty: true}, master: master}
}

func (p *ptyRepl) typ(s string) { p.master.Write([]byte(s)) }

// waitRow waits until the cursor's row reads want with the cursor at col
// (-1: at the row's end, a bare prompt's space counted).
func (p *ptyRepl) waitRow(want string, col int) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sc := p.screen()
		row := sc.cursorRow()
		end := col
		if end < 0 {
			end = stringWidth(row)
			if row == "›" {
				end = 2
			}
		}
		if row == want && sc.col == end {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the cursor's row is %q at column %d, want %q at column %d; the screen:\n%s", row, sc.col, want, end, sc.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits for lembas to end and gives its exit status.
func (p *ptyRepl) waitExit() int {
	p.t.Helper()
	select {
	case <-p.master.done:
		return p.master.code
	case <-time.After(20 * time.Second):
		p.t.Fatalf("lembas did not end; the screen:\n%s", p.screen().text())
	}
	return -1
}

func TestReplKeysUnderPTY(t *testing.T) {
	fm := newFakeModel(t)
	proj := copyProject(t, "basic")
	state := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SHELL=/bin/sh", "TERM=xterm-256color", "NO_COLOR=1",
		"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + t.TempDir()}

	// Ctrl-C at the trust question quits, and nothing is remembered: the
	// next start asks again.
	p := startPTYRepl(t, proj, env)
	p.expect("Do you trust")
	p.waitRow("trust it? [y/n]", 16)
	p.typ("\x03")
	p.expect("not answered: nothing remembered")
	p.waitExit()
	if _, err := os.Stat(filepath.Join(state, "lembas", "trust.json")); err == nil {
		data, _ := os.ReadFile(filepath.Join(state, "lembas", "trust.json"))
		t.Errorf("Ctrl-C at the trust question remembered an answer: %s", data)
	}
	if n := len(fm.got()); n != 0 {
		t.Errorf("%d model requests before any prompt", n)
	}

	p = startPTYRepl(t, proj, env)
	p.expect("Do you trust") // asked again
	p.typ("y")
	p.expect("trusted; remembered")
	p.waitRow("›", -1)

	// A notice longer than the row breaks at a space, never inside a word.
	p.typ("/share\r")
	want := replLinkText("share_no_service")
	p.expect("start one with")
	p.waitRow("›", -1)
	var rows []string
	for _, row := range strings.Split(p.screen().text(), "\n") {
		if len(rows) > 0 || strings.HasPrefix(row, "no lembas service") {
			if row == "›" {
				break
			}
			rows = append(rows, row)
		}
	}
	if len(rows) < 2 || strings.Join(rows, " ") != want {
		t.Errorf("the /share notice is not wrapped at words; its rows:\n%s", strings.Join(rows, "\n"))
	}
	for _, row := range rows {
		if stringWidth(row) > 100 {
			t.Errorf("a row wider than the terminal: %q", row)
		}
	}

	// Cancelling a turn with a line and a command queued cancels them
	// too, and says so; neither is sent.
	hold := make(chan struct{})
	rep := textReply("Streaming words that will be cut off by the person.")
	rep.hold, rep.holdAt = hold, strings.LastIndex(rep.body[:strings.Index(rep.body, "cut")], "data: ")
	fm.push(rep)
	p.typ("start a turn\r")
	p.expect("Streaming words")
	p.typ("and also this\r")
	p.expect("queued for the model's next step: and also this")
	p.typ("/usage\r")
	p.expect("runs when the turn ends: /usage")
	p.typ("\x03")
	p.expect("turn cancelled")
	p.expect("cancelled with the turn, not sent: 2 queued lines — and also this · /usage")
	close(hold)
	p.waitRow("›", -1)
	fm.push(textReply("The next answer."))
	p.typ("next one\r")
	p.expect("The next answer.")
	p.turnDone()
	p.waitRow("›", -1)
	reqs := fm.got()
	if n := len(reqs); n != 2 { // the cancelled turn's and the next one's
		t.Errorf("%d model requests, want 2: a queued line was sent after the cancel", n)
	}
	for _, rq := range reqs {
		if strings.Contains(string(rq.Raw), "and also this") {
			t.Errorf("the queued line reached the model: %s", rq.Raw)
		}
	}
	if strings.Contains(p.screen().text(), "this session: ") {
		t.Errorf("the queued /usage ran after the cancel:\n%s", p.screen().text())
	}

	// An always answer says its scope on the card; /permissions lists it
	// with an id, and revoke takes it back.
	fm.push(callsReply(fakeCall{"bash", map[string]any{"command": "touch made.txt"}}), textReply("Made it."))
	p.typ("make a file\r")
	p.expect("│ p always here: any `touch …` command, in later sessions here too")
	p.expect("n deny · e edit")
	p.typ("p")
	p.expect("allowed from now on in this project")
	p.expect("Made it.")
	p.turnDone()
	p.waitRow("›", -1)
	p.typ("/permissions\r")
	p.expect("a1  always here   bash: touch *")
	p.expect("revoke ID")
	p.typ("/permissions revoke a7\r")
	p.expect("no permission a7 here")
	p.typ("/permissions revoke a1\r")
	p.expect("revoked a1: bash: touch *")
	p.typ("/permissions revoke --all\r")
	p.expect("y revokes, any other key keeps them")
	p.typ("n")
	p.expect("nothing revoked")
	p.waitRow("›", -1)
	p.typ("/permissions\r")
	p.expect("Nothing is allowed in")
	p.waitRow("›", -1)

	// A command wider than the row is broken at spaces on the card, each
	// row behind its border, nothing of it cut.
	// So is a purpose longer than the row (the head's reason and purpose
	// ran past the row, and on without the border).
	long := "touch " + strings.Repeat("a-rather-long-file-name ", 6) + "last-one"
	purpose := strings.TrimSpace(strings.Repeat("making the long files the person asked for ", 3))
	fm.push(callsReply(fakeCall{"bash", map[string]any{"command": long, "purpose": purpose}}), textReply("Made them."))
	p.typ("make long files\r")
	p.expect("n deny · e edit")
	rows = strings.Split(p.screen().text(), "\n")
	var head []string
	for i, row := range rows {
		if strings.HasPrefix(row, "│ for: making") {
			for ; i < len(rows) && !strings.HasPrefix(rows[i], "│ $ touch"); i++ {
				if stringWidth(rows[i]) > 100 || !strings.HasPrefix(rows[i], "│ ") {
					t.Errorf("a purpose row past the terminal or without its border: %q", rows[i])
				}
				head = append(head, strings.TrimPrefix(rows[i], "│ "))
			}
		}
	}
	if len(head) < 2 || strings.Join(head, " ") != "for: "+purpose {
		t.Errorf("the long purpose on the card, row by row: %q", head)
	}
	from := -1
	for i, row := range rows {
		if strings.HasPrefix(row, "│ $ touch a-rather") {
			from = i
		}
	}
	var card []string
	for i := from; from >= 0 && i < len(rows) && !strings.HasPrefix(rows[i], "│ a always"); i++ {
		if !strings.HasPrefix(rows[i], "│ ") {
			t.Errorf("a row of the card's command without its border: %q", rows[i])
		}
		if stringWidth(rows[i]) > 100 {
			t.Errorf("a card row wider than the terminal: %q", rows[i])
		}
		card = append(card, strings.TrimPrefix(rows[i], "│ "))
	}
	if len(card) < 2 || strings.Join(card, " ") != "$ "+long {
		t.Errorf("the long command on the card, row by row: %q", card)
	}
	p.typ("y")
	p.expect("Made them.")
	p.turnDone()
	p.waitRow("›", -1)

	// Wide characters take two columns: the cursor lands after 日本語 at
	// column 8, Left steps over one character, and x lands before 語.
	p.typ("日本語")
	p.waitRow("› 日本語", 8)
	p.typ("\x1b[D")
	p.waitRow("› 日本語", 6)
	p.typ("x")
	p.waitRow("› 日本x語", 7)
	p.typ("\x05\x15") // Ctrl-E, Ctrl-U: the row is empty again
	p.waitRow("›", -1)
	p.typ("\x04")
	p.waitExit()
}
