package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// probeTimeline records, from the tools' side, when each call of a step
// started and ended, and any moment an exclusive call and another ran at
// once.
type probeTimeline struct {
	mu       sync.Mutex
	seq      []string        // "start r1", "end X", … in the order they happened
	running  map[string]bool // calls running now
	overlaps []string
	pairs    map[string]chan struct{} // a pair of reads meets here: they ran together
	met      map[string]int
}

func (p *probeTimeline) start(id string, exclusive bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq = append(p.seq, "start "+id)
	for other := range p.running {
		if exclusive || other == "X" {
			p.overlaps = append(p.overlaps, id+" started while "+other+" ran")
		}
	}
	p.running[id] = true
}

func (p *probeTimeline) end(id string, exclusive bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, id)
	if exclusive && len(p.running) > 0 {
		p.overlaps = append(p.overlaps, fmt.Sprintf("%s ended while %v ran", id, p.running))
	}
	p.seq = append(p.seq, "end "+id)
}

// meet waits until the other read of its pair runs too: parallel-safe
// calls of one step really run together (false: it never came).
func (p *probeTimeline) meet(pair string) bool {
	p.mu.Lock()
	p.met[pair]++
	ch := p.pairs[pair]
	if p.met[pair] == 2 {
		close(ch)
	}
	p.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(guard): // a hang guard, not a timing: serial reads never meet
		return false
	}
}

// probeTools are two tools registered into a session through the
// toolbox's own hook for extra tools: probe_read (a reader, parallel-safe)
// and probe_exclusive (a reader marked exclusive), each recording its
// calls' start and end.
func probeTools(tl *probeTimeline) ([]*toolSpec, map[string]toolFunc) {
	params := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"pair":{"type":"string"}},"required":["id"]}`)
	specs := []*toolSpec{
		{Name: "probe_read", Description: "A reader.", Risk: "read", Block: "read", Parameters: params},
		{Name: "probe_exclusive", Description: "A reader that runs alone.", Risk: "read", Block: "read", Exclusive: true, Parameters: params},
	}
	var a struct{ ID, Pair string }
	read := func(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
		a := a
		json.Unmarshal(raw, &a)
		tl.start(a.ID, false)
		met := tl.meet(a.Pair)
		tl.end(a.ID, false)
		if !met {
			return toolResult{Text: a.ID + " ran alone"}
		}
		return toolResult{Text: a.ID + " done"}
	}
	excl := func(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
		a := a
		json.Unmarshal(raw, &a)
		tl.start(a.ID, true)
		for range 500 { // room for any call started beside it to show
			runtime.Gosched()
		}
		tl.end(a.ID, true)
		return toolResult{Text: a.ID + " done"}
	}
	return specs, map[string]toolFunc{"probe_read": read, "probe_exclusive": excl}
}

// TestEngineExclusiveRunsAlone: a step of the scripted model over real
// HTTP calls two readers, an exclusive tool and two readers more. The
// readers before it run together and end before it starts; it runs with
// nothing beside it; the readers after it start only once it ended, and
// run together again.
func TestEngineExclusiveRunsAlone(t *testing.T) {
	f := newFakeModel(t)
	proj := sessionEnv(t, f)
	f.push(callsReply(
		fakeCall{"probe_read", map[string]any{"id": "r1", "pair": "a"}},
		fakeCall{"probe_read", map[string]any{"id": "r2", "pair": "a"}},
		fakeCall{"probe_exclusive", map[string]any{"id": "X"}},
		fakeCall{"probe_read", map[string]any{"id": "r3", "pair": "b"}},
		fakeCall{"probe_read", map[string]any{"id": "r4", "pair": "b"}},
	), textReply("done"))
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "edit", cwd: proj}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	tl := &probeTimeline{running: map[string]bool{}, met: map[string]int{},
		pairs: map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}}
	specs, impls := probeTools(tl)
	if err := e.tb.addExtraTools(specs, impls); err != nil {
		t.Fatal(err)
	}
	out := e.runTurn(context.Background(), "probe")
	if out.Err != nil || out.Answer != "done" {
		t.Fatalf("outcome %+v", out)
	}
	got := f.got()
	res := toolResults(got[len(got)-1])
	for _, want := range []string{"r1 done", "r2 done", "X done", "r3 done", "r4 done"} {
		if !slices.ContainsFunc(res, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("results %q lack %q (a reader that ran alone did not run beside its pair)", res, want)
		}
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.overlaps) > 0 {
		t.Errorf("the exclusive call overlapped another: %v (timeline %v)", tl.overlaps, tl.seq)
	}
	at := func(s string) int { return slices.Index(tl.seq, s) }
	for _, r := range []string{"r1", "r2"} {
		if at("end "+r) < 0 || at("end "+r) > at("start X") {
			t.Errorf("%s had not ended when X started: %v", r, tl.seq)
		}
	}
	for _, r := range []string{"r3", "r4"} {
		if at("start "+r) < at("end X") {
			t.Errorf("%s started before X ended: %v", r, tl.seq)
		}
	}
}
