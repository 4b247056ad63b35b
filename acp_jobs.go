package main

// Jobs over ACP: plain ACP has no notion of background work, so a job is
// shown as a tool call of its own — tool_call (in_progress) when it
// starts, tool_call_update (completed or failed) with its end line when it
// ends — under an id no model call uses ("job:<id>"), with the job in
// _meta.lembas. These go out whether or not a prompt runs: a job outlives
// the turn that started it. Progress phases have no ACP shape and are not
// sent here; the device link forwards them by kind.

// jobUpdate turns a job event into its tool-call update.
func (s *acpSession) jobUpdate(ev event) {
	j := ev.Job
	if j == nil {
		return
	}
	id := "job:" + j.ID
	meta := map[string]any{"lembas": map[string]any{"job": j}}
	if j.Status == "running" {
		kind := theACPSpec().Kinds["shell"]
		if j.Kind == "subagent" {
			kind = theACPSpec().Kinds["task"]
		}
		if kind == "" {
			kind = "other"
		}
		s.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": j.Title, "kind": kind,
			"status": "in_progress", "_meta": meta})
		return
	}
	status := "completed"
	if j.Status != "done" {
		status = "failed"
	}
	line := jobText("repl_ended", "id", j.ID, "status", j.Status, "code", jobCodeText(j), "title", oneLine(j.Title, 80))
	s.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status,
		"content": []map[string]any{{"type": "content", "content": textBlock(line)}}, "_meta": meta})
}

// jobCodeText is the " (exit N)" of a job that has an exit code.
func jobCodeText(j *jobInfo) string {
	if j.Code == nil {
		return ""
	}
	return fillPairs(theSpec().Loop.Jobs.Marks["code"], "code", *j.Code)
}
