package main

// Capability library (harness/acp.md): when the instance's library is this
// device's — one instance logged in, a token with the library scope, no
// library: in config.yaml (mcpFromLogin) — the link offers `library`, reads
// `_meta.lembas.library: { bases: [{ id, name }] }` on session/new and on
// every prompt (the newer replacing the older) and names those bases to
// the model in blocks/library.md's {{knowledge_scope}}; an empty list is
// the account's whole library, and the bullet drops. Each library call the
// session makes already carries `_meta.lembas.scope: <sessionId>`
// (mcp.go), which the instance answers within the chat's bases.

import (
	"strings"
)

// linkLibrary is _meta.lembas.library.
type linkLibrary struct {
	Bases []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"bases"`
}

// libraryOverLogin says whether the link's login gives its sessions the
// instance's library.
func libraryOverLogin(l *loginRecord) bool {
	if l == nil {
		return false
	}
	cfg, err := loadConfig()
	if err != nil {
		return false
	}
	lib, ok := mcpFromLogin(cfg, readLogins())
	return ok && strings.HasPrefix(lib.URL, strings.TrimRight(l.URL, "/"))
}

// knowledgeScope is {{knowledge_scope}} for the chat's bases: "" (the
// bullet drops) when none are named.
func knowledgeScope(lib *linkLibrary) string {
	if lib == nil {
		return ""
	}
	var names []string
	for _, b := range lib.Bases {
		n := strings.TrimSpace(oneLine(b.Name, theLinkSpec().Library.NameMax))
		if n == "" {
			n = oneLine(b.ID, theLinkSpec().Library.NameMax)
		}
		if n != "" {
			names = append(names, n)
		}
		if len(names) == theLinkSpec().Library.BasesMax {
			break
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fillPairs(linkText("knowledge_scope"), "bases", strings.Join(names, ", "))
}

// withKnowledgeScope is a system prompt that names the chat's bases: one
// more bullet at the end of the library block (blocks/library.md, as
// trimmed to the tools offered), or the block's heading with that bullet
// alone where the block was left out.
func withKnowledgeScope(system string, lib *linkLibrary) string {
	scope := knowledgeScope(lib)
	if scope == "" {
		return system
	}
	head, _, _ := strings.Cut(libraryBlock(), "\n")
	i := strings.Index(system, head+"\n")
	if i < 0 {
		return strings.TrimRight(system, "\n") + "\n\n" + head + "\n- " + scope
	}
	// The block's bullets follow its heading, one a line; the scope goes
	// after the last of them.
	end := i + len(head)
	for {
		rest := system[end:]
		if !strings.HasPrefix(rest, "\n- ") {
			break
		}
		nl := strings.Index(rest[1:], "\n")
		if nl < 0 {
			end = len(system)
			break
		}
		end += 1 + nl
	}
	return system[:end] + "\n- " + scope + system[end:]
}
