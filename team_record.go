package main

// team_record.go: the team's records, data only — what a member's
// transcript keeps (session.Team) and what the team event carries.

// teamRecord is a team member as its transcript's session keeps it
// (store.go session.Team): who it is in the tree and what it left behind,
// saved with every change so a kill -9 loses none of it.
type teamRecord struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Position string   `json:"position,omitempty"`
	Parent   string   `json:"parent"` // "main" or a sub-manager's id
	Task     string   `json:"task"`
	Mode     string   `json:"mode"`
	Model    string   `json:"model"`
	Lead     bool     `json:"lead,omitempty"`
	Request  []string `json:"request,omitempty"` // request options it may still ask for
	Granted  []string `json:"granted,omitempty"`
	State    string   `json:"state"`
	Findings []string `json:"findings,omitempty"`
	Report   string   `json:"report,omitempty"`
}

// teamNode is one agent of the tree as the team event, _lembas/team and
// team_read show it.
type teamNode struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Position string   `json:"position,omitempty"`
	Parent   string   `json:"parent,omitempty"`
	Task     string   `json:"task,omitempty"`
	Mode     string   `json:"mode"`
	Model    string   `json:"model"`
	Lead     bool     `json:"lead,omitempty"`
	State    string   `json:"state"`
	Phase    string   `json:"phase,omitempty"`
	Since    string   `json:"since,omitempty"` // RFC 3339: when it started (or was added, while waiting)
	Session  string   `json:"session,omitempty"`
	Request  []string `json:"request,omitempty"`
	Granted  []string `json:"granted,omitempty"`
	Findings int      `json:"findings"`
}

// teamTree is the whole tree: the main agent first, then every subagent
// in the order it was added, with the setting it runs under.
type teamTree struct {
	Min    int        `json:"min"`
	Max    int        `json:"max"`
	Agents []teamNode `json:"agents"`
}
