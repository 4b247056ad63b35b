package main

// The logins store: each login to an instance is <state>/logins/<name>.json
// (mode 0600, in a folder of mode 0700), written by `lembas login` and read
// by the model connections, MCP's /mcp and the link. A token kept here is
// never printed, logged or put in config.yaml.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// loginRecord is one login as kept on disk.
type loginRecord struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Instance string `json:"instance"`
	Token    string `json:"token"`
	// Scopes are what the token endpoint said the token was granted (its
	// space-separated scope answer). A pasted token has none: the seed
	// names no way to learn a pasted token's scopes, so it is taken as
	// granted none of them (the library over /mcp is then not used).
	Scopes  []string  `json:"scopes,omitempty"`
	Created time.Time `json:"created"`
	// About is what the instance said of itself at login (GET
	// /api/v1/instance): its name and version, when it answered.
	About *instanceAbout `json:"about,omitempty"`
}

// instanceAbout is /api/v1/instance as far as lembas reads it; the seeds
// name the endpoint and not its fields, so name and version are read when
// there and anything else is left alone.
type instanceAbout struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// hasScope says whether the login's token was granted scope.
func (l *loginRecord) hasScope(scope string) bool { return contains(l.Scopes, scope) }

func loginsDir() string { return filepath.Join(stateDir(), "logins") }

func validLoginName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return n[0] != '.'
}

// saveLogin writes a login with its token, mode 0600 in a 0700 folder.
func saveLogin(l *loginRecord) error {
	dir := loginsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errorf("saving the login: %v", err)
	}
	// The folder holds tokens: one made earlier with wider permissions is
	// narrowed, and one that cannot be is not written into.
	if err := os.Chmod(dir, 0o700); err != nil {
		return errorf("saving the login: making %s private: %v", dir, err)
	}
	b, _ := json.MarshalIndent(l, "", "  ") // a struct of strings and times: it always encodes
	if err := writeFileAtomic(filepath.Join(dir, l.Name+".json"), append(b, '\n'), 0o600); err != nil {
		return errorf("saving the login: %v", err)
	}
	return nil
}

// readLogins gives every login, by name.
func readLogins() []*loginRecord {
	names, _ := filepath.Glob(filepath.Join(loginsDir(), "*.json"))
	sort.Strings(names)
	var out []*loginRecord
	for _, p := range names {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var l loginRecord
		if json.Unmarshal(data, &l) == nil && validLoginName(l.Name) && l.URL != "" {
			out = append(out, &l)
		}
	}
	return out
}
