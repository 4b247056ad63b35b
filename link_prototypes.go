package main

// Prototypes, the CLI's own (harness README 1.1.0, 3.0.0; acp.md
// capability prototypes): a client that asks for them in initialize
// (clientCapabilities._meta.lembas.capabilities holds "prototypes") gets
// the capability, and a chat's _meta.lembas.prototypes { offered, sources }
// then puts blocks/prototypes.md in the session's prompt. A prototype is
// files the model writes in the project under prototypes/<name>/; its page
// is named in the transcript when it is written, in every front end
// (session_prototypes.go). A 3.0.0 instance sends no prototypes field, and
// then nothing changes.

import "strings"

// linkPrototypes is _meta.lembas.prototypes.
type linkPrototypes struct {
	Offered bool   `json:"offered"`
	Sources string `json:"sources"`
}

// prototypesBlock is blocks/prototypes.md filled, "" when not offered.
func prototypesBlock(p *linkPrototypes) string {
	if p == nil || !p.Offered {
		return ""
	}
	s, err := fill(theSpec().Prompts["blocks/prototypes.md"], map[string]string{"sources": strings.TrimSpace(p.Sources)})
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// withPrototypes is a system prompt with the prototypes block after it
// when the chat offers prototypes (the block before is taken away first,
// so a prompt that stops offering them drops it).
func withPrototypes(system string, p *linkPrototypes) string {
	head, _, _ := strings.Cut(theSpec().Prompts["blocks/prototypes.md"], "\n")
	if i := strings.Index(system, "\n\n"+head+"\n"); i >= 0 {
		end := strings.Index(system[i+2:], "\n\n")
		if end < 0 {
			system = system[:i]
		} else {
			system = system[:i] + system[i+2+end:]
		}
	}
	if b := prototypesBlock(p); b != "" {
		return system + "\n\n" + b
	}
	return system
}
