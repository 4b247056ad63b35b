package main

import (
	"context"
	"testing"
)

// TestTeamHoldWaitsForReport: a member whose state has left "working" but
// whose end has not yet marked its report is still waited for. A manager
// that looked in that window ended its turn without the report (the
// sub-manager's LEAD-REPORT lost from TestTeamEndToEnd, 1 run in 60).
func TestTeamHoldWaitsForReport(t *testing.T) {
	e := newEngine(nil, nil, nil, nil, &session{ID: "main"}, 0)
	waiting := make(chan struct{}, 1)
	e.emit = func(ev event) {
		if ev.Type == evProgress && ev.Progress != nil && ev.Progress.Phase == "waiting_for_subagents" {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
	}
	tm := e.team()
	m := &teamMember{parent: e, running: true, rec: teamRecord{ID: "s1", State: "finished"}}
	tm.mu.Lock()
	tm.members = append(tm.members, m)
	tm.mu.Unlock()
	held := make(chan bool, 1)
	go func() { held <- e.teamHold(context.Background()) }()
	select {
	case ok := <-held:
		t.Fatalf("teamHold returned %v before the member's report was marked", ok)
	case <-waiting:
	}
	// The rest of end(): the report marked, the loop gone, the team told.
	e.markJob("<team-report id=\"s1\">")
	tm.mu.Lock()
	m.running = false
	tm.touchLocked()
	tm.mu.Unlock()
	if !<-held {
		t.Fatal("teamHold did not go on with the report")
	}
}
