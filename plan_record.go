package main

// plan_record.go: the plan's record — the shape the session keeps, the journal
// replays and events carry. Data only: what a plan means (writing it,
// updating it, submitting it for review) is plan.go's.

type plan struct {
	Title      string      `json:"title,omitempty"`
	Summary    string      `json:"summary,omitempty"`
	Findings   []string    `json:"findings,omitempty"`
	Objectives []string    `json:"objectives,omitempty"`
	Phases     []planPhase `json:"phases"`
	NextPhase  int         `json:"next_phase"`
	NextTask   int         `json:"next_task"`
	Version    int         `json:"version,omitempty"` // one more at every change (setPlan); the wire's version
}

type planPhase struct {
	ID    string     `json:"id"`
	Title string     `json:"title"`
	Tasks []planTask `json:"tasks"`
}

type planTask struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status string `json:"status"` // todo, doing, done, dropped
}
