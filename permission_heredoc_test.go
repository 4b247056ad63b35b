package main

import "encoding/json"

// The floor_heredoc conformance area (here-documents, written scripts,
// PowerShell blocks) is run by the floor area's runner.
func init() {
	conformanceRunners["floor_heredoc"] = func(input json.RawMessage) (any, error) {
		return conformanceRunners["floor"](input)
	}
}
