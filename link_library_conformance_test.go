package main

// Conformance area link_library: where the chat's knowledge bases
// (_meta.lembas.library) are named in a system prompt.

import "encoding/json"

func init() {
	conformanceRunners["link_library"] = func(input json.RawMessage) (any, error) {
		var in struct {
			System  string       `json:"system"`
			Library *linkLibrary `json:"library"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		return map[string]string{"system": withKnowledgeScope(in.System, in.Library)}, nil
	}
}
