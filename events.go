package main

// Events are the one seam between the engine and whoever shows its work:
// the REPL, the -p printers, ACP on stdio and the device link each consume
// the same stream and none reaches into the engine. An event is a flat
// struct with omitempty fields so stream-json can print it as it is.

import "time"

// Event kinds.
const (
	evPrompt     = "prompt"      // the person's message, as stored
	evText       = "text"        // a piece of the answer as it streams
	evReasoning  = "reasoning"   // a piece of the model's reasoning
	evToolStart  = "tool_start"  // a tool call about to run (after permission)
	evToolEnd    = "tool_end"    // its result
	evToolOutput = "tool_output" // a running command's latest output (its tail), as it comes
	evUsage      = "usage"       // tokens of one model request
	evRetry      = "retry"       // a request is retried after an error
	evNotice     = "notice"      // something the person should know (a refused call, a nudge)
	evDone       = "done"        // the turn ended; StopReason says how
	evError      = "error"       // the turn failed; Text says why and what to do
	evStep       = "step"        // a new model request starts (progress)
	evSteered    = "steered"     // a steer message was given to the model at this step
	evPlan       = "plan"        // the session's plan changed; Plan carries it whole
	evJob        = "job"         // background work: a job started or ended (Job), or marks given to the model (Text)
	evProgress   = "progress"    // what the turn is doing now (Progress; progress.go)
	evTeam       = "team"        // the team's tree changed (Team; team.go)
)

type event struct {
	Type       string     `json:"type"`
	Session    string     `json:"session_id,omitempty"`
	Turn       int        `json:"turn,omitempty"`
	Step       int        `json:"step,omitempty"`
	Text       string     `json:"text,omitempty"`
	Tool       *toolEvent `json:"tool,omitempty"`
	Usage      *usage     `json:"usage,omitempty"`
	StopReason string     `json:"stop_reason,omitempty"`
	Plan       *plan      `json:"plan,omitempty"`
	Job        *jobInfo   `json:"job,omitempty"`
	Progress   *phase     `json:"progress,omitempty"`
	Agent      string     `json:"agent,omitempty"` // the subagent an event is about (its job id or name)
	Team       *teamTree  `json:"team,omitempty"`  // on team: the whole tree (team_record.go)
	By         string     `json:"by,omitempty"`    // on prompt: "machine" when lembas started the turn
	Time       time.Time  `json:"time"`
}

// toolEvent describes one call: what it is and, on tool_end, how it went.
type toolEvent struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Block    string `json:"block"`
	Risk     string `json:"risk,omitempty"`
	Input    string `json:"input"`
	ResultID string `json:"result_id,omitempty"`
	Output   string `json:"output,omitempty"`
	IsError  bool   `json:"is_error,omitempty"`
	Status   string `json:"status,omitempty"` // completed, failed, refused, cancelled
	Edited   bool   `json:"edited,omitempty"` // the person changed the command before it ran; Input is what ran
}

// usage counts the tokens of one request (or, summed, of a turn).
type usage struct {
	Input  int `json:"input_tokens"`
	Output int `json:"output_tokens"`
	Cached int `json:"cached_tokens"`
}

func (u *usage) add(o usage) {
	u.Input += o.Input
	u.Output += o.Output
	u.Cached += o.Cached
}

// jobInfo is a job as events carry it (evJob): to front ends, stream-json
// and ACP's tool updates.
type jobInfo struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Status string `json:"status"`
	Code   *int   `json:"code,omitempty"`
	Agent  string `json:"agent,omitempty"` // a subagent job's agent
}

// phase is one progress event's body.
type phase struct {
	Phase string         `json:"phase"`
	Since time.Time      `json:"since"`
	Data  map[string]any `json:"data,omitempty"`
	Text  string         `json:"text"`
}
