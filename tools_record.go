package main

// tools_record.go: the conditions a session's tools were offered under, as the
// session keeps them. Data only: deciding the offer is tools_offer.go's.

// offerDecision is what a session keeps of its first decision.
type offerDecision struct {
	Held []string `json:"held"`
}
