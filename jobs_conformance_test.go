package main

// Conformance runners for jobs (the end marks, reading a job's output),
// subagents (the model rules, the mode rule) and progress (which phase an
// engine's events mean, and the line drawn). Each runs the real code.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func init() {
	conformanceRunners["jobs"] = runJobsCase
	conformanceRunners["subagents"] = runSubagentsCase
	conformanceRunners["progress"] = runProgressCase
}

// runJobsCase: "mark" makes a job that ended and answers its end mark;
// "read" writes to a job's buffer and answers each job_output read.
func runJobsCase(input json.RawMessage) (any, error) {
	var in struct {
		Op     string `json:"op"`
		Kind   string `json:"kind"`
		Title  string `json:"title"`
		Status string `json:"status"`
		Code   *int   `json:"code"`
		Answer string `json:"answer"`
		Keep   int    `json:"keep"`
		Steps  []struct {
			Tool  string          `json:"tool"` // op call: a call by this name (job or a former one)
			Args  json.RawMessage `json:"args"`
			Write string          `json:"write"`
			Read  string          `json:"read"` // new, tail
			End   string          `json:"end"`  // a status: the job ends
		} `json:"steps"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	m := newJobManager()
	defer m.stopAll()
	j, err := m.add(in.Kind, in.Title, nil)
	if err != nil {
		return nil, err
	}
	if in.Op == "call" {
		// Each call goes the engine's way: looked up by name (aliases
		// too), its arguments converted and checked, then run.
		tb, err := newToolbox(os.TempDir(), false)
		if err != nil {
			return nil, err
		}
		e := &engine{}
		e.jx.mgr = m
		var out []string
		for _, s := range in.Steps {
			if s.Write != "" {
				j.Write([]byte(s.Write))
				continue
			}
			t := tb.lookup(s.Tool)
			if t == nil {
				return nil, fmt.Errorf("no tool %s", s.Tool)
			}
			args, err := checkArgs(t, convertFormer(t, s.Tool, s.Args), theSpec().Purpose.Schema)
			if err != nil {
				out = append(out, t.Name+" refused: "+err.Error())
				continue
			}
			r := toolJob(e, context.Background(), t, args)
			out = append(out, t.Name+": "+r.Text)
		}
		return out, nil
	}
	switch in.Op {
	case "mark":
		if in.Kind == "subagent" {
			j.sub = &subagentRun{answer: in.Answer}
		}
		code, coded := 0, in.Code != nil
		if coded {
			code = *in.Code
		}
		j.finish(in.Status, code, coded)
		return map[string]string{"mark": j.endMark()}, nil
	case "read":
		if in.Keep > 0 {
			j.out.keep = in.Keep
		}
		t := theSpec().Tools["job"]
		var out []string
		for _, s := range in.Steps {
			switch {
			case s.Write != "":
				j.Write([]byte(s.Write))
			case s.End != "":
				j.finish(s.End, 0, true)
			default:
				out = append(out, j.read(t, s.Read == "tail"))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown op %q", in.Op)
}

// runSubagentsCase: "model" applies the model and capacity rules, "mode"
// the never-wider rule, "named" the person-named rule alone.
func runSubagentsCase(input json.RawMessage) (any, error) {
	var in struct {
		Op     string     `json:"op"`
		Check  modelCheck `json:"check"`
		Mode   string     `json:"mode"`
		Parent string     `json:"parent"`
		Said   []string   `json:"said"`
		Names  []string   `json:"names"`
		Args   string     `json:"args"`     // setting: /settings subagents's words
		Own    int        `json:"parallel"` // own: the session model's capacity
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	switch in.Op {
	case "model":
		return map[string]string{"refusal": subagentModelRefusal(in.Check)}, nil
	case "mode":
		return map[string]bool{"allowed": modeNoWider(in.Mode, in.Parent)}, nil
	case "named":
		return map[string]bool{"named": personNamed(in.Said, in.Names...)}, nil
	case "setting": // 3.4.0: the Subagents (Min, Max) setting's words (team_setting.go)
		mn, mx, err := parseSubagentSetting(in.Args)
		if err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
		return map[string]any{"min": mn, "max": mx}, nil
	case "own": // whether the session's model serves a subagent itself (else context.note.team_own)
		ref := newModelRef(&connection{Name: "local"}, "mock")
		ref.Meta.Parallel = in.Own
		return map[string]bool{"serves": teamOwnCanServe(&engine{toolHost: toolHost{ref: ref}})}, nil
	}
	return nil, fmt.Errorf("unknown op %q", in.Op)
}

// runProgressCase sends events through a real engine's send and answers
// the phases it emitted (phase and text), and a line drawn at an elapsed.
func runProgressCase(input json.RawMessage) (any, error) {
	var in struct {
		Events []event `json:"events"`
		Wait   string  `json:"wait_for_person"` // a tool: an approval card waits after the events
		Line   *struct {
			Phase   string         `json:"phase"`
			Data    map[string]any `json:"data"`
			Elapsed string         `json:"elapsed"`
		} `json:"line"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	if in.Line != nil {
		d, err := time.ParseDuration(in.Line.Elapsed)
		if err != nil {
			return nil, err
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		p := &phase{Phase: in.Line.Phase, Since: now, Data: in.Line.Data, Text: phaseText(in.Line.Phase, in.Line.Data)}
		return map[string]string{"line": progressLine(p, now.Add(d))}, nil
	}
	var got []map[string]string
	e := newEngine(nil, nil, nil, nil, &session{ID: "s"}, 0)
	e.emit = func(ev event) {
		if ev.Type == evProgress {
			got = append(got, map[string]string{"phase": ev.Progress.Phase, "text": ev.Progress.Text})
		}
	}
	for _, ev := range in.Events {
		e.send(ev)
	}
	if in.Wait != "" {
		e.waitingForPerson(in.Wait)()
	}
	if got == nil {
		got = []map[string]string{}
	}
	return got, nil
}
