package main

// Conformance areas scheduled, silent and monitor (harness 3.5.0): the
// mode, the wait and the refusals of a scheduled run; the sentinel and the
// stripped text of its report; the monitor's hash and what a watch command
// may run.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

func init() {
	conformanceRunners["scheduled"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Scheduled    bool            `json:"scheduled"`
			MaxMode      string          `json:"max_mode"`
			Request      string          `json:"request"`
			Mode         string          `json:"mode"`
			ApprovalWait json.RawMessage `json:"approval_wait"`
			Agents       json.RawMessage `json:"agents"`
			Schedule     *string         `json:"schedule"`
			Run          *string         `json:"run"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		lim := remoteLimits{Enabled: true, Scheduled: in.Scheduled, MaxMode: in.MaxMode}
		switch in.Request {
		case "prompt":
			ls := &linkSession{sched: &schedRun{}}
			if err := ls.refuseScheduled(lim); err != nil {
				return map[string]any{"refused": err.Message}, nil
			}
			return map[string]any{}, nil
		case "monitor":
			if _, err := (&linkService{}).monitor(json.RawMessage(`{}`), lim); err != nil {
				return map[string]any{"refused": err.(*rpcError).Message}, nil
			}
			return map[string]any{}, nil
		}
		p := schedParams{Schedule: "sch_1", Run: "run_1", Mode: in.Mode, ApprovalWait: in.ApprovalWait, Agents: in.Agents}
		if in.Schedule != nil {
			p.Schedule = *in.Schedule
		}
		if in.Run != nil {
			p.Run = *in.Run
		}
		r, err := judgeScheduled(lim, p)
		if err != nil {
			return map[string]any{"refused": err.Message}, nil
		}
		out := map[string]any{"mode": r.Mode, "asked": r.Asked, "approval_wait": r.ApprovalWait}
		if r.Agents != nil {
			out["agents"] = r.Agents
		}
		return out, nil
	}
	conformanceRunners["silent"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Text       string `json:"text"`
			StopReason string `json:"stop_reason"`
			Failed     bool   `json:"failed"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.StopReason == "" {
			in.StopReason = "end_turn"
		}
		return runReport(in.StopReason, in.Failed, in.Text), nil
	}
	conformanceRunners["monitor"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Hash *struct {
				Output string `json:"output"`
				Exit   int    `json:"exit"`
			} `json:"hash"`
			Judge *struct {
				Command string   `json:"command"`
				Mode    string   `json:"mode"`
				Allow   []string `json:"allow"`
			} `json:"judge"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if in.Hash != nil {
			return map[string]any{"hash": watchHash([]byte(in.Hash.Output), in.Hash.Exit)}, nil
		}
		tmp, err := os.MkdirTemp("", "lembas-monitor")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		tmp, _ = filepath.EvalSymlinks(tmp)
		cfg := &config{}
		cfg.Permissions.Allow = in.Judge.Allow
		rerr := watchJudgeWith(tmp, in.Judge.Mode, in.Judge.Command, cfg)
		if rerr == nil {
			return map[string]any{"run": true}, nil
		}
		// Which refusal, by its text's key, so the case holds the rule and
		// not the wording of a reason the floor composes.
		for _, k := range []string{"asked", "denied", "empty", "long"} {
			if strings.HasPrefix(rerr.Message, strings.SplitN(theSchedSpec().Refusals["watch_"+k], "{{", 2)[0]) {
				return map[string]any{"refused": k}, nil
			}
		}
		return map[string]any{"refused": rerr.Message}, nil
	}
}
