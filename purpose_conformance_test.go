package main

// Conformance areas purpose (a call's purpose on its card, never in the
// tool's arguments) and exclusive (which of a step's calls run together),
// and the engine end to end: a bash call's purpose reaches the approver.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	conformanceRunners["purpose"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		t := theSpec().Tools[in.Tool]
		if t == nil {
			return nil, fmt.Errorf("no tool %s", in.Tool)
		}
		purpose := callPurpose(t, in.Arguments)
		args, err := checkArgs(t, in.Arguments, theSpec().Purpose.Schema)
		if err != nil {
			return nil, err
		}
		root, err := os.MkdirTemp("", "purpose")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
		p := newPermissions("manual", root, false)
		req := p.request("c1", t, args, decision{Verdict: "ask", Reason: "asked"})
		req.Purpose = purpose
		meta := permissionParams("s1", req, map[string]any{"toolCallId": "c1"})["_meta"].(map[string]any)["lembas"].(map[string]any)
		var got any
		json.Unmarshal(args, &got)
		return map[string]any{"purpose": meta["purpose"], "arguments": got}, nil
	}
	conformanceRunners["exclusive"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Calls []struct {
				Spec      string `json:"spec"` // a tool as the harness says it
				Name      string `json:"name"`
				Risk      string `json:"risk"`
				Exclusive bool   `json:"exclusive"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		groups := [][]string{}
		together := false // the last group takes more readers
		for _, c := range in.Calls {
			t := &toolSpec{Name: c.Name, Risk: c.Risk, Exclusive: c.Exclusive}
			if c.Spec != "" {
				if t = theSpec().Tools[c.Spec]; t == nil {
					return nil, fmt.Errorf("no tool %s", c.Spec)
				}
			}
			if batchable(t) && together {
				groups[len(groups)-1] = append(groups[len(groups)-1], t.Name)
				continue
			}
			groups = append(groups, []string{t.Name})
			together = batchable(t)
		}
		return groups, nil
	}
}

// TestEnginePurposeOnCard: the model's purpose for a bash call is on the
// card the person is asked with, and the command runs without it.
func TestEnginePurposeOnCard(t *testing.T) {
	f := newFakeModel(t)
	proj := sessionEnv(t, f)
	f.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "echo made > out.txt", "purpose": "write the  marker"}}),
		textReply("done"),
	)
	e, cleanup, err := newSessionEngine(context.Background(), &sessionOpts{mode: "manual", cwd: proj}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ap := &scriptedApprover{answers: []approvalAnswer{{Choice: "once"}}}
	e.ask = ap
	out := e.runTurn(context.Background(), "mark it")
	if out.Err != nil || len(ap.asked) != 1 {
		t.Fatalf("outcome %+v, asked %d", out, len(ap.asked))
	}
	if got := ap.asked[0].Purpose; got != "write the marker" {
		t.Errorf("card purpose %q", got)
	}
	if strings.Contains(ap.asked[0].Input, "purpose") {
		t.Errorf("the card's input carries the purpose: %s", ap.asked[0].Input)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "out.txt")); err != nil || strings.TrimSpace(string(b)) != "made" {
		t.Errorf("the command did not run as asked: %q %v", b, err)
	}
}

// TestReplCardPurpose: the terminal's approval card shows the call's
// purpose on its for: line.
func TestReplCardPurpose(t *testing.T) {
	fm := newFakeModel(t)
	fm.push(
		callsReply(fakeCall{"bash", map[string]any{"command": "touch made.txt", "purpose": "say hello"}}),
		textReply("Said it."),
	)
	h := startRepl(t, fm, "manual", false, yes())
	h.expect("/help for commands")
	h.typ("greet")
	h.expect("┌ bash · execute")
	h.expect("│ for: say hello")
	h.expect("└ y once")
	h.typ("n")
	h.typ("")
	h.expect("Said it.")
	h.exit()
}
