package main

// harness_team.go: the shapes of loop.json's team section and of
// subagents.setting (harness/team.md, harness/subagents.md), read by the
// team's files (team*.go).

// teamSpec is loop.json's team.
type teamSpec struct {
	About          string            `json:"about"`
	ContextShare   float64           `json:"context_share"`
	FinalTurnSteps int               `json:"final_turn_steps"`
	TranscriptTail int               `json:"transcript_tail"`
	RequestOptions map[string]string `json:"request_options"`
	WorkRisks      []string          `json:"work_risks"`
	States         []string          `json:"states"`
	Refusals       map[string]string `json:"refusals"`
	Marks          map[string]string `json:"marks"`
	Texts          map[string]string `json:"texts"`
}

// subagentSetting is loop.json's subagents.setting: the Subagents (Min,
// Max) setting's defaults, range and texts.
type subagentSetting struct {
	About      string `json:"about"`
	Label      string `json:"label"`
	Hint       string `json:"hint"`
	Min        int    `json:"min"`
	Max        int    `json:"max"`
	Cap        int    `json:"cap"`
	Own        string `json:"own"`
	Now        string `json:"now"`
	Offered    string `json:"offered"`
	NotOffered string `json:"not_offered"`
	WhyMax     string `json:"why_max"`
	WhyModel   string `json:"why_model"`
	Bad        string `json:"bad"`
	Saved      string `json:"saved"`
}
