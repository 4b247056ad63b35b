package main

// The REPL's side of the device link (issue 11 items 3 and 5; numbers and
// texts in harness/repl_link.json):
//
//   - every turn run at the terminal is recorded in turns/<sessionId>.json
//     through the same turnBook the service uses (link_turns.go: merged with
//     the file, written whole and atomically), under a turn id of its own,
//     so a session both sides work has one record of every turn;
//   - when the session's model is a login's, the turn line ends with the
//     instance's month cost from /v1/usage, read in the background and kept
//     usage_ttl_s — a turn never waits on the instance for it;
//   - the account's personalization (/v1/me/personalization) is put after
//     the system prompt as the link's sessions put it, and
//     `/settings personality|personality_custom|instructions TEXT` writes
//     that one field back.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// replLinkSpec is harness/repl_link.json.
type replLinkSpec struct {
	About                   string            `json:"about"`
	UsageTTLS               int               `json:"usage_ttl_s"`
	UsageTimeoutS           int               `json:"usage_timeout_s"`
	PersonalizationTimeoutS int               `json:"personalization_timeout_s"`
	TurnIDPrefix            string            `json:"turn_id_prefix"`
	ShareQueue              int               `json:"share_queue"` // the web UI's prompts a shared session holds at most, waiting
	Fields                  []string          `json:"fields"`
	Texts                   map[string]string `json:"texts"`
}

// theReplLinkSpec parses harness/repl_link.json once; a broken file is a
// build-time bug TestReplLinkSpec catches.
//
//go:noinline
func theReplLinkSpec() *replLinkSpec { return replLinkSpecFile.get() }

var replLinkSpecFile = &harnessFile[replLinkSpec]{name: "harness/repl_link.json"}

func replLinkText(key string, kv ...any) string {
	return loopText(theReplLinkSpec().Texts, key, kv...)
}

// replLink is what the link adds to one REPL.
type replLink struct {
	r     *repl
	turns *turnBook

	mu         mutex
	login      *loginRecord // the login of the turn running (or last run); nil: not a login's model
	usage      *instanceUsage
	usageOf    string // the login usage was read from
	usageAt    time.Time
	usageBusy  bool
	person     *personalization
	personOf   string        // the login person was read from
	personDone chan struct{} // closed when the read of personOf ended

	shareConn replShare // /share's connection to the service (repl_share.go)
	turnID    string    // the turn running now, for its events on the link
	lastTitle string    // the title the web UI was last told of
}

func newReplLink(r *repl) *replLink {
	rl := &replLink{r: r, turns: newTurnBook(), lastTitle: r.e.sess.Title}
	rl.shareConn.web = make(chan shareWork, theReplLinkSpec().ShareQueue)
	if l := loginOfRef(r.e.ref); l != nil {
		rl.login = l
		rl.startPersonalization(l) // read while the person types the first prompt
		rl.refreshUsage(l, time.Now())
	}
	return rl
}

// loginOfRef is the login whose connection ref is on, nil for any other.
func loginOfRef(ref *modelRef) *loginRecord {
	if ref == nil || ref.Conn == nil || ref.Conn.Source != "login" {
		return nil
	}
	l, err := findLogin(ref.Conn.Name)
	if err != nil {
		return nil
	}
	return l
}

// newTerminalTurnID is a turn id no client made: the prefix says where it
// came from, 64 random bits that it is unique.
func newTerminalTurnID() string {
	var b [8]byte
	rand.Read(b[:])
	return theReplLinkSpec().TurnIDPrefix + hex.EncodeToString(b[:])
}

// beginTurn records a terminal turn as running before the engine starts it
// and puts the login's personalization into the system prompt. It returns
// the turn id endTurn finishes.
func (rl *replLink) beginTurn() string { return rl.beginTurnAs("") }

// beginTurnAs is beginTurn under a turn id the web UI gave ("" makes one).
func (rl *replLink) beginTurnAs(tid string) string {
	l := loginOfRef(rl.r.e.ref)
	rl.mu.Lock()
	rl.login = l
	rl.mu.Unlock()
	rl.applyPersonalization(l)
	id := rl.r.e.sess.ID
	if tid == "" {
		tid = newTerminalTurnID()
	}
	rl.mu.Lock()
	rl.turnID = tid
	rl.mu.Unlock()
	rl.turns.start(id, tid, len(rl.r.e.sess.Turns)+1) // one write; the engine numbers the turn it appends so
	rl.r.reannounce(true)                             // a shared session is busy now (repl_share.go)
	return tid
}

// endTurn records the turn's answer, shaped as a prompt's answer on the
// link, so a client reading the record sees a terminal turn like its own.
func (rl *replLink) endTurn(tid string, out outcome) json.RawMessage {
	lm := map[string]any{"turnId": tid}
	if strings.HasPrefix(tid, theReplLinkSpec().TurnIDPrefix) {
		lm["origin"] = "terminal" // else the web UI's prompt, answered as a link prompt is
	}
	stop := out.StopReason
	if stop == "" {
		stop = "end_turn"
	}
	if out.Err != nil {
		lm["error"] = oneLine(out.Err.Error(), 500)
	}
	if len(out.Unsent) > 0 {
		lm["unsent"] = out.Unsent
	}
	ans := rawJSON(map[string]any{"stopReason": stop, "_meta": map[string]any{"lembas": lm}})
	rl.turns.finish(rl.r.e.sess.ID, tid, ans)
	rl.mu.Lock()
	rl.turnID = ""
	rl.mu.Unlock()
	rl.r.reannounce(false) // idle again, with the title and mode it has now
	return ans
}

// usageStale says whether a usage read at `at` is due again at now: never
// read, or older than usage_ttl_s. Errors and 404s count as a read, so a
// slow or usage-less instance is asked once a ttl, not once a turn.
func usageStale(at, now time.Time) bool {
	return at.IsZero() || now.Sub(at) >= time.Duration(theReplLinkSpec().UsageTTLS)*time.Second
}

// refreshUsage reads /v1/usage in the background when what is kept is stale
// or from another login; one read at a time.
func (rl *replLink) refreshUsage(l *loginRecord, now time.Time) {
	rl.mu.Lock()
	if rl.usageBusy || (rl.usageOf == l.Name && !usageStale(rl.usageAt, now)) {
		rl.mu.Unlock()
		return
	}
	rl.usageBusy = true
	rl.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(theReplLinkSpec().UsageTimeoutS)*time.Second)
		defer cancel()
		u, err := l.usage(ctx)
		rl.mu.Lock()
		defer rl.mu.Unlock()
		rl.usageBusy = false
		if err == nil || rl.usageOf != l.Name {
			rl.usage = u // an error keeps the last figure of the same login
		}
		rl.usageOf, rl.usageAt = l.Name, time.Now()
	}()
}

// usageSuffix is what the turn line adds: the month's cost on the login's
// instance as last read, "" when the model is not a login's or nothing was
// read yet. It starts a read when the figure is stale; it never waits.
func (rl *replLink) usageSuffix() string {
	rl.mu.Lock()
	l, u, of := rl.login, rl.usage, rl.usageOf
	rl.mu.Unlock()
	if l == nil {
		return ""
	}
	rl.refreshUsage(l, time.Now())
	if of != l.Name {
		return ""
	}
	return turnUsageText(l.Name, u)
}

// turnUsageText is the turn line's usage part for a login's /v1/usage.
func turnUsageText(login string, u *instanceUsage) string {
	if u == nil {
		return ""
	}
	return replLinkText("turn_usage", "login", login, "cost", money(u.Month.CostByCurrency))
}

// startPersonalization reads the login's personalization in the
// background; applyPersonalization waits for it.
func (rl *replLink) startPersonalization(l *loginRecord) {
	done := make(chan struct{})
	rl.mu.Lock()
	rl.personOf, rl.person, rl.personDone = l.Name, nil, done
	rl.mu.Unlock()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(theReplLinkSpec().PersonalizationTimeoutS)*time.Second)
		defer cancel()
		p, err := l.getPersonalization(ctx)
		if err != nil {
			rl.r.say("notice", replLinkText("personalization_read_failed", "login", l.Name, "reason", err.Error()))
			return
		}
		if n := unknownPreset(p, l.Name); n != "" {
			rl.r.say("notice", n) // the instance's preset is not one of lembas's: none here
		}
		rl.mu.Lock()
		if rl.personOf == l.Name {
			rl.person = p
		}
		rl.mu.Unlock()
	}()
}

// applyPersonalization sets the system prompt's personalization block to
// the login's (none for a model that is no login's). Called before a turn
// starts, where no request is being built. It waits for a read under way,
// which is bounded by personalization_timeout_s.
func (rl *replLink) applyPersonalization(l *loginRecord) {
	var p *personalization
	if l != nil {
		rl.mu.Lock()
		if rl.personOf != l.Name || rl.personDone == nil {
			rl.mu.Unlock()
			rl.startPersonalization(l)
			rl.mu.Lock()
		}
		done := rl.personDone
		rl.mu.Unlock()
		<-done
		rl.mu.Lock()
		p = rl.person
		rl.mu.Unlock()
	}
	if p == nil {
		p = localPersonalization() // no login's model, or its read failed: config.yaml's keys
	}
	sess := rl.r.e.sess
	sess.System = withPersonalization(sess.System, p)
}

// settings handles `/settings <field> TEXT` for a personalization field:
// a PUT of that field alone with enabled: true to the login of the
// session's model, its refusal (403, 422) said as the instance says it.
// It reports whether args named such a field.
func (rl *replLink) settings(args string) bool {
	k, v, _ := strings.Cut(strings.TrimSpace(args), " ")
	known := false
	for _, f := range theReplLinkSpec().Fields {
		known = known || f == k
	}
	if !known {
		return false
	}
	v = strings.TrimSpace(v)
	l := loginOfRef(rl.r.e.ref)
	if l == nil {
		rl.r.say("error", replLinkText("personalization_no_login", "field", k, "model", rl.r.e.ref.String()))
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(theReplLinkSpec().PersonalizationTimeoutS)*time.Second)
	defer cancel()
	if err := l.putPersonalization(ctx, k, v); err != nil {
		rl.r.say("error", replLinkText("personalization_failed", "field", k, "login", l.Name, "reason", err.Error()))
		return true
	}
	rl.mu.Lock()
	if rl.personOf == l.Name {
		p := personalization{}
		if rl.person != nil {
			p = *rl.person
		}
		on := true
		p.Enabled = &on
		switch k {
		case "personality":
			p.Personality = v
		case "personality_custom":
			p.PersonalityCustom = v
		case "instructions":
			p.Instructions = v
		}
		rl.person = &p // the next turn's system prompt has it
	}
	rl.mu.Unlock()
	rl.r.say("status", replLinkText("personalization_written", "field", k, "login", l.Name))
	return true
}

// turnRecordAnswer reads a terminal turn's recorded answer back (tests and
// the conformance runner): its stop reason and origin.
func turnRecordAnswer(raw json.RawMessage) (stop, origin string) {
	var a struct {
		StopReason string `json:"stopReason"`
		Meta       struct {
			Lembas struct {
				Origin string `json:"origin"`
			} `json:"lembas"`
		} `json:"_meta"`
	}
	json.Unmarshal(raw, &a)
	return a.StopReason, a.Meta.Lembas.Origin
}
