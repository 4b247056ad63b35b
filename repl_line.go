package main

// The REPL's input line on a terminal: our own small line editor, because
// the REPL writes while the person types. x/term's editor assumes output
// only ever comes in whole lines at the start of a row; a streamed answer
// ends mid-line, so its prompt was not redrawn after a turn, typed keys
// landed inside the answer, and the progress line stayed behind.
//
// The screen, from the top: the output (its last line may be unfinished),
// then one row that is always the input row — the prompt (the progress
// line while a turn runs) and what is being typed. Writing output erases
// the input row, goes back to where the output stopped (one row up, at its
// column, when the last line was unfinished), writes, steps to a fresh row
// when the output stopped mid-line, and draws the input row again. A line
// longer than the row scrolls sideways, so the input is always one row.
//
// Keys come from one goroutine (readKeys) that decodes them and hands them
// to a card waiting for one, to Ctrl-C's handler, or to the editor; Enter
// gives the line to the REPL.

import (
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
)

// Keys that are not runes, in a private range as x/term does.
const (
	keyUp rune = 0xe000 + iota
	keyDown
	keyLeft
	keyRight
	keyHome
	keyEnd
	keyDelete
	keyWordLeft
	keyWordRight
	keyPasteOn
	keyPasteOff
	keyUnknown
)

// lineEditor is the input row and the output above it.
type lineEditor struct {
	mu     mutex
	out    io.Writer
	width  int
	size   func() int // the terminal's width now (nil: fixed)
	prompt string     // painted; promptW is how many columns it takes
	pw     int
	keep   bool // an entered line stays on screen after its prompt
	line   []rune
	pos    int
	outCol int  // columns of the output's unfinished last line (0: it ended)
	shown  bool // the input row is drawn below the output
	paste  bool
	hist   term.History
	histAt int // -1: the line being typed, else the history entry shown
	saved  []rune
}

func newLineEditor(out io.Writer, width int) *lineEditor {
	return &lineEditor{out: out, width: width, histAt: -1}
}

// visibleWidth is how many columns s takes: escape sequences take none,
// wide characters two, combining marks none (text_width.go).
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i += escapeLen(s[i:])
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n += runeWidth(r)
	}
	return n
}

// escapeLen is the length of the escape sequence at the start of s (CSI
// or a two-byte one).
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	if s[1] != '[' {
		return 2
	}
	for j := 2; j < len(s); j++ {
		if s[j] >= 0x40 && s[j] <= 0x7e {
			return j + 1
		}
	}
	return len(s)
}

func (ed *lineEditor) cols() int {
	if ed.size != nil {
		if w := ed.size(); w > 0 {
			ed.width = w
		}
	}
	if ed.width < 10 {
		return 10
	}
	return ed.width
}

// Write puts output above the input row.
func (ed *lineEditor) Write(p []byte) (int, error) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	ed.writeLocked(string(p))
	return len(p), nil
}

func (ed *lineEditor) writeLocked(s string) {
	if s == "" {
		if ed.shown {
			ed.drawLocked()
		}
		return
	}
	var b strings.Builder
	if ed.shown {
		b.WriteString("\r\x1b[K")
		if ed.outCol > 0 {
			b.WriteString("\x1b[A\r")
			if c := ed.outCol % ed.cols(); c > 0 {
				b.WriteString("\x1b[" + strconv.Itoa(c) + "C")
			}
		}
	}
	b.WriteString(strings.ReplaceAll(s, "\n", "\r\n"))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		ed.outCol = visibleWidth(s[i+1:])
	} else {
		ed.outCol += visibleWidth(s)
	}
	io.WriteString(ed.out, b.String())
	if ed.shown {
		if ed.outCol > 0 {
			io.WriteString(ed.out, "\r\n")
		}
		ed.drawLocked()
	}
}

// drawLocked draws the input row where the cursor is: the prompt, the
// part of the line around the cursor that fits, the cursor in place.
// Everything is counted in columns (a wide character takes two), so the
// cursor lands after what it follows on the screen, not after as many
// runes.
func (ed *lineEditor) drawLocked() {
	w := ed.cols()
	prompt, pw := ed.prompt, ed.pw
	if pw > w-10 { // a long question keeps room for some of its answer
		prompt, pw = cutVisible(prompt, w-10), w-10
	}
	room := w - pw - 1
	start := 0
	for start < ed.pos && runesWidth(ed.line[start:ed.pos]) > room {
		start++
	}
	for start < len(ed.line) && start < ed.pos && runeWidth(ed.line[start]) == 0 {
		start++ // never begin with a mark that belongs to a character cut off
	}
	end, used := start, 0
	for end < len(ed.line) && used+runeWidth(ed.line[end]) <= room {
		used += runeWidth(ed.line[end])
		end++
	}
	var b strings.Builder
	b.WriteString("\r" + prompt + string(ed.line[start:end]) + "\x1b[K\r")
	if c := pw + runesWidth(ed.line[start:ed.pos]); c > 0 {
		b.WriteString("\x1b[" + strconv.Itoa(c) + "C")
	}
	io.WriteString(ed.out, b.String())
}

// cutVisible keeps the first n columns of a painted string (its colour
// ended).
func cutVisible(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			l := escapeLen(s[i:])
			b.WriteString(s[i : i+l])
			i += l
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if runeWidth(r) > n {
			break
		}
		b.WriteRune(r)
		i += size
		n -= runeWidth(r)
	}
	return b.String() + "\x1b[0m"
}

// setPrompt changes the prompt and redraws the row; keep says whether an
// entered line stays on screen with it (a question's answer, a prompt
// typed at rest) or goes (a line typed while the progress line shows,
// which the REPL reports in its own words).
func (ed *lineEditor) setPrompt(p string, keep bool) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if p == ed.prompt && keep == ed.keep {
		return
	}
	ed.prompt, ed.pw, ed.keep = p, visibleWidth(p), keep
	if ed.shown {
		ed.drawLocked()
	}
}

// show draws the input row below the output; hide takes it away, leaving
// the cursor at the start of a fresh row (what follows, a shell's prompt,
// starts at the left).
func (ed *lineEditor) show() {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if ed.shown {
		return
	}
	if ed.outCol > 0 {
		io.WriteString(ed.out, "\r\n")
	}
	ed.shown = true
	ed.drawLocked()
}

func (ed *lineEditor) hide() {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if !ed.shown {
		if ed.outCol > 0 {
			io.WriteString(ed.out, "\r\n")
			ed.outCol = 0
		}
		return
	}
	io.WriteString(ed.out, "\r\x1b[K")
	ed.shown = false
	ed.outCol = 0
}

// setLine puts text in the line with the cursor at its end (a question's
// pre-filled answer).
func (ed *lineEditor) setLine(s string) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	ed.line = []rune(s)
	ed.pos = len(ed.line)
	if ed.shown {
		ed.drawLocked()
	}
}

func (ed *lineEditor) text() string {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	return string(ed.line)
}

// enter takes the line: it stays on screen under its prompt when keep is
// set, and the row is empty again.
func (ed *lineEditor) enter() string {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	s := string(ed.line)
	if ed.keep && ed.shown {
		shown := ed.prompt + s
		ed.line, ed.pos = nil, 0
		io.WriteString(ed.out, "\r\x1b[K")
		ed.shown = false
		ed.writeLocked(shown + "\n")
		ed.shown = true
		ed.drawLocked()
	} else {
		ed.line, ed.pos = nil, 0
		if ed.shown {
			ed.drawLocked()
		}
	}
	if !ed.paste && ed.hist != nil {
		ed.hist.Add(s)
	}
	ed.histAt, ed.saved = -1, nil
	return s
}

// edit applies one key that changes the line or moves in it.
func (ed *lineEditor) edit(k rune) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	switch k {
	case 127, 8: // Backspace: the character before the cursor, with its marks
		if ed.pos > 0 {
			i := ed.charLeft()
			ed.line = append(ed.line[:i], ed.line[ed.pos:]...)
			ed.pos = i
		}
	case keyDelete, 4:
		if ed.pos < len(ed.line) {
			ed.line = append(ed.line[:ed.pos], ed.line[ed.charRight():]...)
		}
	case keyLeft, 2:
		ed.pos = ed.charLeft()
	case keyRight, 6:
		ed.pos = ed.charRight()
	case keyHome, 1:
		ed.pos = 0
	case keyEnd, 5:
		ed.pos = len(ed.line)
	case 11: // Ctrl-K
		ed.line = ed.line[:ed.pos]
	case 21: // Ctrl-U
		ed.line = append([]rune{}, ed.line[ed.pos:]...)
		ed.pos = 0
	case 23: // Ctrl-W
		i := ed.wordLeft()
		ed.line = append(ed.line[:i], ed.line[ed.pos:]...)
		ed.pos = i
	case keyWordLeft:
		ed.pos = ed.wordLeft()
	case keyWordRight:
		for ed.pos < len(ed.line) && ed.line[ed.pos] == ' ' {
			ed.pos++
		}
		for ed.pos < len(ed.line) && ed.line[ed.pos] != ' ' {
			ed.pos++
		}
	case keyUp, 16, keyDown, 14:
		ed.historyStep(k == keyUp || k == 16)
	default:
		if k == '\t' || k == '\n' || !unicode.IsControl(k) && k < keyUp {
			if k == '\n' {
				k = ' '
			}
			ed.line = append(ed.line[:ed.pos], append([]rune{k}, ed.line[ed.pos:]...)...)
			ed.pos++
		}
	}
	if ed.shown {
		ed.drawLocked()
	}
}

// charLeft and charRight are where the cursor goes one character left or
// right: a combining mark or a zero-width joiner goes with the character
// before it, so the cursor never stops between a letter and its accent
// (where the screen shows no place to stop).
func (ed *lineEditor) charLeft() int {
	i := ed.pos
	for i > 0 {
		i--
		if runeWidth(ed.line[i]) > 0 {
			break
		}
	}
	return i
}

func (ed *lineEditor) charRight() int {
	i := ed.pos
	if i < len(ed.line) {
		i++
	}
	for i < len(ed.line) && runeWidth(ed.line[i]) == 0 {
		i++
	}
	return i
}

func (ed *lineEditor) wordLeft() int {
	i := ed.pos
	for i > 0 && ed.line[i-1] == ' ' {
		i--
	}
	for i > 0 && ed.line[i-1] != ' ' {
		i--
	}
	return i
}

// historyStep shows the previous (back) or next entry of the history,
// keeping the line being typed to come back to.
func (ed *lineEditor) historyStep(back bool) {
	if ed.hist == nil {
		return
	}
	at := ed.histAt
	if back {
		if at+1 >= ed.hist.Len() {
			return
		}
		if at == -1 {
			ed.saved = append([]rune{}, ed.line...)
		}
		at++
	} else {
		if at < 0 {
			return
		}
		at--
	}
	ed.histAt = at
	if at == -1 {
		ed.line = ed.saved
	} else {
		ed.line = []rune(ed.hist.At(at))
	}
	ed.pos = len(ed.line)
}

// complete runs Tab's completion on the line.
func (ed *lineEditor) complete(f func(line string, pos int, key rune) (string, int, bool)) {
	ed.mu.Lock()
	line := string(ed.line)
	pos := len(string(ed.line[:ed.pos]))
	ed.mu.Unlock()
	nl, np, ok := f(line, pos, '\t')
	if !ok {
		return
	}
	ed.mu.Lock()
	ed.line = []rune(nl)
	ed.pos = utf8.RuneCountInString(nl[:min(np, len(nl))])
	if ed.shown {
		ed.drawLocked()
	}
	ed.mu.Unlock()
}

// keyDecoder turns bytes from the terminal into keys, holding back a
// sequence cut between two reads.
type keyDecoder struct{ rest []byte }

// next decodes the first key of the bytes held, or says it needs more.
func (d *keyDecoder) next() (rune, bool) {
	b := d.rest
	if len(b) == 0 {
		return 0, false
	}
	if b[0] == 0x1b {
		if len(b) < 2 {
			return 0, false
		}
		switch b[1] {
		case '[':
			n := escapeLen(string(b))
			last := b[n-1]
			if last < 0x40 || last > 0x7e {
				return 0, false // the sequence goes on in the next read
			}
			seq := string(b[2:n])
			d.rest = b[n:]
			switch seq {
			case "A":
				return keyUp, true
			case "B":
				return keyDown, true
			case "C":
				return keyRight, true
			case "D":
				return keyLeft, true
			case "H", "1~", "7~":
				return keyHome, true
			case "F", "4~", "8~":
				return keyEnd, true
			case "3~":
				return keyDelete, true
			case "1;5D", "1;3D":
				return keyWordLeft, true
			case "1;5C", "1;3C":
				return keyWordRight, true
			case "200~":
				return keyPasteOn, true
			case "201~":
				return keyPasteOff, true
			}
			return keyUnknown, true
		case 'O':
			if len(b) < 3 {
				return 0, false
			}
			d.rest = b[3:]
			switch b[2] {
			case 'H':
				return keyHome, true
			case 'F':
				return keyEnd, true
			}
			return keyUnknown, true
		case 'b':
			d.rest = b[2:]
			return keyWordLeft, true
		case 'f':
			d.rest = b[2:]
			return keyWordRight, true
		}
		d.rest = b[2:]
		return keyUnknown, true
	}
	if !utf8.FullRune(b) {
		return 0, false
	}
	r, n := utf8.DecodeRune(b)
	d.rest = b[n:]
	return r, true
}

// cardKeys is what a card waiting for one key listens on, and the
// discarding of what was typed after its key.
type cardKeys struct {
	mu       mutex
	ch       chan rune
	discard  bool
	held     []rune    // letters after the answer, dropped if Enter ends them
	lastDrop time.Time // when the last key went to the card or was held
}

// cardTailMax is the longest word tail after a card's key taken as part
// of its answer ("yes" after y, "no" after n).
const cardTailMax = 4

// readKeys is the terminal's one reader: keys to a card, Ctrl-C and
// Ctrl-D to the REPL, the rest to the editor; Enter hands the line over.
// It ends, closing r.lines, at the end of input.
func (r *repl) readKeys(src io.Reader) {
	defer r.endLines()
	var d keyDecoder
	buf := make([]byte, 512)
	for {
		n, err := src.Read(buf)
		d.rest = append(d.rest, buf[:n]...)
		for {
			k, ok := d.next()
			if !ok {
				break
			}
			if !r.key(k) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// key handles one key; false ends the reading.
func (r *repl) key(k rune) bool {
	ed := r.ed
	if k == 3 { // Ctrl-C goes to its handler, whatever waits
		if r.ctrlC(strings.TrimSpace(ed.text()) == "") {
			ed.setLine("")
		}
		return !r.quitting()
	}
	c := r.cards
	c.mu.Lock()
	if c.ch != nil {
		ch := c.ch
		c.lastDrop = time.Now()
		c.mu.Unlock()
		select {
		case ch <- k:
		default:
		}
		return true
	}
	if c.discard {
		// The keys right after a card's answer: the rest of a word and
		// Enter (`yes⏎`) are the answer too, and dropped; anything else
		// (a space, a slash, a longer word) is typing, and goes on.
		gap := time.Since(c.lastDrop) > r.discardWindow()
		switch {
		case gap:
			held := c.held
			c.discard, c.held = false, nil
			c.mu.Unlock()
			for _, h := range held {
				r.ed.edit(h)
			}
			c.mu.Lock()
		case k == '\r' || k == '\n':
			c.discard, c.held = false, nil
			c.mu.Unlock()
			return true
		case unicode.IsLetter(k) && len(c.held) < cardTailMax:
			c.held = append(c.held, k)
			c.lastDrop = time.Now()
			c.mu.Unlock()
			time.AfterFunc(r.discardWindow()+time.Millisecond, r.releaseHeld)
			return true
		default:
			held := c.held
			c.discard, c.held = false, nil
			c.mu.Unlock()
			for _, h := range held {
				r.ed.edit(h)
			}
			c.mu.Lock()
		}
	}
	c.mu.Unlock()
	switch {
	case k == keyPasteOn:
		ed.mu.Lock()
		ed.paste = true
		ed.mu.Unlock()
	case k == keyPasteOff:
		ed.mu.Lock()
		ed.paste = false
		ed.mu.Unlock()
	case k == '\r' || (k == '\n' && !r.edPaste()):
		pasted := r.edPaste()
		return r.deliver(ed.enter(), pasted)
	case k == '\n': // a newline inside a paste: the pasted line ends
		return r.deliver(ed.enter(), true)
	case k == 4 && ed.text() == "":
		return r.ctrlD()
	case k == '\t' && !r.edPaste():
		ed.complete(r.complete)
	case k == 12: // Ctrl-L: draw the row again
		ed.Write(nil)
	default:
		ed.edit(k)
	}
	return true
}

func (r *repl) discardWindow() time.Duration {
	return time.Duration(theReplSpec().Numbers.CardDiscardMS) * time.Millisecond
}

// releaseHeld gives the letters held after a card's answer to the line
// once a pause shows they were not its tail: a person typing on at once.
func (r *repl) releaseHeld() {
	c := r.cards
	c.mu.Lock()
	if !c.discard || len(c.held) == 0 || time.Since(c.lastDrop) < r.discardWindow() {
		c.mu.Unlock()
		return
	}
	held := c.held
	c.discard, c.held = false, nil
	c.mu.Unlock()
	for _, h := range held {
		r.ed.edit(h)
	}
}

func (r *repl) edPaste() bool {
	r.ed.mu.Lock()
	defer r.ed.mu.Unlock()
	return r.ed.paste
}

// listenKey makes the channel a one-key card reads from.
func (r *repl) listenKey() chan rune {
	c := r.cards
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ch = make(chan rune, 64)
	c.discard = false
	return c.ch
}

// unlistenKey ends a card's wait: the rest of a word and Enter typed
// right after its answer (`yes⏎` answers y; no pause longer than
// repl.json's card_discard_ms between keys) are dropped. Letters that a
// pause follows instead are the start of a line, and go to it then.
func (r *repl) unlistenKey() {
	c := r.cards
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		return
	}
	c.ch = nil
	c.discard, c.held = true, nil
}

// deliver is a line entered: joined with the next when it ends in "\" or
// is part of a paste, then given to the REPL. false when quitting.
func (r *repl) deliver(line string, pasted bool) bool {
	if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
		r.pend = append(r.pend, strings.TrimSuffix(line, `\`))
		r.setPromptNow(r.paint("prompt", r.text("continue_prompt")), true)
		return true
	}
	r.pend = append(r.pend, line)
	if pasted {
		return true
	}
	msg := strings.Join(r.pend, "\n")
	r.pend = nil
	select {
	case r.lines <- msg:
	case <-r.quitCh:
		return false
	}
	r.mu.Lock()
	r.updatePromptLocked()
	r.mu.Unlock()
	return true
}

// ctrlD is Ctrl-D at an empty line: at rest it quits; while a turn runs
// it is ignored, and the screen says why and what Ctrl-C does.
func (r *repl) ctrlD() bool {
	r.mu.Lock()
	running := r.running
	r.mu.Unlock()
	if running {
		r.say("notice", r.text("ctrl_d_running"))
		return true
	}
	r.quit()
	return false
}

// endLines is the end of the terminal's input: the REPL sees its lines end.
func (r *repl) endLines() {
	if len(r.pend) > 0 {
		select {
		case r.lines <- strings.Join(r.pend, "\n"):
		case <-r.quitCh:
		}
	}
	close(r.lines)
}
