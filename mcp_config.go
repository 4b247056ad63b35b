package main

// Where MCP servers come from, in this order (a later source does not
// replace an earlier server of the same name):
//
//   - config.yaml mcp: — name → command/args/env/cwd or url/headers, enabled,
//     tools: {allow, deny}, startup_timeout and call_timeout (seconds), risk,
//     _meta (sent with every call) and session_scope (the instance's library:
//     every call carries _meta.lembas.scope, the session's id);
//   - the project's .mcp.json ({"mcpServers": {name: {...}}}, the format other
//     agents write), only in a folder the person said to trust, since it
//     starts programs;
//   - ACP session/new mcpServers (stdio {name, command, args, env: [{name,
//     value}]}, http {type: "http", name, url, headers: [{name, value}]});
//   - the instance's library: logged in to exactly one instance whose login
//     has the library scope, and no library: in config.yaml, an HTTP server
//     at <instance>/mcp with the login's token as its bearer, in memory only
//     (harness/mcp.json library names it).
//
// ${VAR} (and ${VAR:-default}) in any value is read from the environment
// when the session starts; a variable that is unset leaves the server out as
// "needs a token", so a token is never written into a file by lembas.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

var reMCPName = lazyRE(`^[A-Za-z0-9_-]+$`)

// checkMCPName refuses a name that would make offered names ambiguous.
func checkMCPName(name string) error {
	if !reMCPName.MatchString(name) || strings.Contains(name, "__") {
		return errorNew(theMCP().text("bad_name", "name", strconv.Quote(name)))
	}
	return nil
}

// sanitizeMCPName makes a name given by an editor or a .mcp.json fit:
// characters outside [A-Za-z0-9_-] become _, and runs of _ one.
func sanitizeMCPName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	if s == "" || s == "_" {
		s = "server"
	}
	return s
}

var reEnvRef = lazyRE(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandMCP replaces ${VAR} and ${VAR:-default} from getenv; a variable
// unset and without a default is added to missing.
//
//go:noinline
func expandMCP(s string, getenv func(string) string, missing *[]string) string {
	return reEnvRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := reEnvRef.FindStringSubmatch(m)
		if v := getenv(sub[1]); v != "" {
			return v
		}
		if sub[2] != "" {
			return sub[3]
		}
		if !contains(*missing, sub[1]) {
			*missing = append(*missing, sub[1])
		}
		return ""
	})
}

// expand expands every value of an entry.
func (c *mcpServerConfig) expand(getenv func(string) string) {
	c.Command = expandMCP(c.Command, getenv, &c.missing)
	for i := range c.Args {
		c.Args[i] = expandMCP(c.Args[i], getenv, &c.missing)
	}
	for k, v := range c.Env {
		c.Env[k] = expandMCP(v, getenv, &c.missing)
	}
	c.Cwd = expandMCP(c.Cwd, getenv, &c.missing)
	c.URL = expandMCP(c.URL, getenv, &c.missing)
	for k, v := range c.Headers {
		c.Headers[k] = expandMCP(v, getenv, &c.missing)
	}
	c.OAuth.ClientID = expandMCP(c.OAuth.ClientID, getenv, &c.missing)
	c.OAuth.ClientSecret = expandMCP(c.OAuth.ClientSecret, getenv, &c.missing)
	c.OAuth.ClientMetadataURL = expandMCP(c.OAuth.ClientMetadataURL, getenv, &c.missing)
	c.OAuth.PrivateKey = expandMCP(c.OAuth.PrivateKey, getenv, &c.missing)
}

// mcpFromConfig reads config.yaml's mcp: section (kept in Raw by
// parseConfig, which leaves unknown top-level keys to their owners).
func mcpFromConfig(cfg *config) ([]mcpServerConfig, error) {
	raw, _ := cfg.Raw.(map[string]any)
	sec, ok := raw["mcp"]
	if !ok || sec == nil {
		return nil, nil
	}
	m, ok := sec.(map[string]any)
	if !ok {
		return nil, errorf("config.yaml mcp: expected servers as \"name:\" entries, each with command or url")
	}
	var out []mcpServerConfig
	for _, name := range sortedKeys(m) {
		if err := checkMCPName(name); err != nil {
			return nil, errorf("config.yaml: %v", err)
		}
		e, ok := m[name].(map[string]any)
		if !ok {
			return nil, errorf("config.yaml: %s", theMCP().text("bad_entry", "name", name, "error", "expected a map"))
		}
		c, err := mcpEntry(name, "config", e, true)
		if err != nil {
			return nil, errorf("config.yaml: %v", err)
		}
		out = append(out, c)
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mcpEntry reads one server's map (config.yaml or .mcp.json); strict says
// an unknown key is an error (config.yaml) rather than ignored (.mcp.json,
// which other agents extend).
// mcpFields is one server entry's fields as read, each by its type: text,
// a list, a map of names to values, a number of seconds. An absent or null
// field is empty; one of another type is an error naming it.
type mcpFields map[string]any

func (e mcpFields) str(k string) (string, error) {
	v, ok := e[k]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", errorf("%s must be text", k)
	}
	return s, nil
}

func (e mcpFields) strs(k string) ([]string, error) {
	v, ok := e[k]
	if !ok || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, errorf("%s must be a list", k)
	}
	var out []string
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out, nil
}

func (e mcpFields) smap(k string) (map[string]string, error) {
	v, ok := e[k]
	if !ok || v == nil {
		return nil, nil
	}
	mm, ok := v.(map[string]any)
	if !ok {
		return nil, errorf("%s must be a map of names to values", k)
	}
	out := map[string]string{}
	for kk, vv := range mm {
		out[kk] = fmt.Sprint(vv)
	}
	return out, nil
}

func (e mcpFields) secs(k string) (time.Duration, error) {
	v, ok := e[k]
	if !ok || v == nil {
		return 0, nil
	}
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	if err != nil || f <= 0 {
		return 0, errorf("%s must be a number of seconds above 0", k)
	}
	return time.Duration(f * float64(time.Second)), nil
}

func mcpEntry(name, source string, e map[string]any, strict bool) (mcpServerConfig, error) {
	c := mcpServerConfig{Name: name, Source: source, Enabled: true}
	bad := func(format string, args ...any) (mcpServerConfig, error) {
		return c, errorNew(theMCP().text("bad_entry", "name", name, "error", fmt.Sprintf(format, args...)))
	}
	f := mcpFields(e)
	str, strs, smap, secs := f.str, f.strs, f.smap, f.secs
	var err error
	for k := range e {
		switch k {
		case "command", "args", "env", "cwd", "url", "headers", "enabled", "tools", "startup_timeout", "call_timeout", "risk", "type", "_meta", "session_scope", "oauth":
		default:
			if strict {
				return bad("unknown key %s", k)
			}
		}
	}
	if c.Command, err = str("command"); err != nil {
		return bad("%v", err)
	}
	if c.Args, err = strs("args"); err != nil {
		return bad("%v", err)
	}
	if c.Env, err = smap("env"); err != nil {
		return bad("%v", err)
	}
	if c.Cwd, err = str("cwd"); err != nil {
		return bad("%v", err)
	}
	if c.URL, err = str("url"); err != nil {
		return bad("%v", err)
	}
	if c.Headers, err = smap("headers"); err != nil {
		return bad("%v", err)
	}
	if v, ok := e["enabled"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return bad("enabled must be true or false")
		}
		c.Enabled = b
	}
	if t, ok := e["tools"].(map[string]any); ok {
		for _, k := range []string{"allow", "deny"} {
			if l, ok := t[k].([]any); ok {
				for _, x := range l {
					if k == "allow" {
						c.AllowTools = append(c.AllowTools, fmt.Sprint(x))
					} else {
						c.DenyTools = append(c.DenyTools, fmt.Sprint(x))
					}
				}
			}
		}
	}
	if c.StartupTimeout, err = secs("startup_timeout"); err != nil {
		return bad("%v", err)
	}
	if c.CallTimeout, err = secs("call_timeout"); err != nil {
		return bad("%v", err)
	}
	if c.Risk, err = str("risk"); err != nil {
		return bad("%v", err)
	}
	if c.Risk != "" && !contains([]string{"read", "write", "execute", "interact"}, c.Risk) {
		return bad("risk %q: use read, write, execute or interact", c.Risk)
	}
	if v, ok := e["session_scope"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return bad("session_scope must be true or false")
		}
		c.SessionScope = b
	}
	if m, ok := e["_meta"]; ok {
		c.Meta, _ = json.Marshal(m)
	}
	if v, ok := e["oauth"]; ok && v != nil {
		if c.OAuth, err = mcpOAuthEntry(v); err != nil {
			return bad("%v", err)
		}
	}
	switch {
	case c.Command == "" && c.URL == "":
		return bad("neither command nor url is given")
	case c.Command != "" && c.URL != "":
		return bad("both command and url are given")
	}
	return c, nil
}

// mcpFromProject reads a trusted project's .mcp.json. A folder not said to
// be trusted gives nothing: its file would start programs.
func mcpFromProject(root string) ([]mcpServerConfig, error) {
	if trusted, known := trustOf(root); !known || !trusted {
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join(root, ".mcp.json"))
	if err != nil {
		return nil, nil
	}
	return parseMCPJSON(data, root)
}

// parseMCPJSON reads the .mcp.json format; a relative cwd is the project's.
func parseMCPJSON(data []byte, root string) ([]mcpServerConfig, error) {
	var f struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, errorf(".mcp.json: %v; it should be {\"mcpServers\": {\"name\": {\"command\": ...}}}", err)
	}
	var out []mcpServerConfig
	names := make([]string, 0, len(f.MCPServers))
	for n := range f.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c, err := mcpEntry(sanitizeMCPName(n), "project", f.MCPServers[n], false)
		if err != nil {
			return nil, errorf(".mcp.json: %v", err)
		}
		if c.Cwd == "" {
			c.Cwd = root
		} else if !filepath.IsAbs(c.Cwd) {
			c.Cwd = filepath.Join(root, c.Cwd)
		}
		out = append(out, c)
	}
	return out, nil
}

// mcpFromACP reads session/new's mcpServers.
func mcpFromACP(list []json.RawMessage) ([]mcpServerConfig, error) {
	var out []mcpServerConfig
	for i, raw := range list {
		var s struct {
			Type    string   `json:"type"`
			Name    string   `json:"name"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
			URL     string   `json:"url"`
			Env     []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"env"`
			Headers []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"headers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errorf("mcpServers[%d]: %v; give {name, command, args, env} or {type: \"http\", name, url, headers}", i, err)
		}
		c := mcpServerConfig{Name: sanitizeMCPName(s.Name), Source: "acp", Enabled: true, Command: s.Command, Args: s.Args, URL: s.URL}
		switch s.Type {
		case "", "stdio":
			if s.Command == "" {
				return nil, errorf("mcpServers[%d] (%s): a stdio server needs a command", i, s.Name)
			}
			c.URL = ""
		case "http":
			if s.URL == "" {
				return nil, errorf("mcpServers[%d] (%s): an http server needs a url", i, s.Name)
			}
			c.Command = ""
		default:
			return nil, errorf("mcpServers[%d] (%s): transport %q is not offered; use stdio or http", i, s.Name, s.Type)
		}
		if len(s.Env) > 0 {
			c.Env = map[string]string{}
			for _, e := range s.Env {
				c.Env[e.Name] = e.Value
			}
		}
		if len(s.Headers) > 0 {
			c.Headers = map[string]string{}
			for _, h := range s.Headers {
				c.Headers[h.Name] = h.Value
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// mcpServersFor gathers a session's servers: config, project, editor; the
// first of a name wins, and ${VAR}s are expanded from getenv.
func mcpServersFor(cfg *config, root string, acp []json.RawMessage, getenv func(string) string) ([]mcpServerConfig, []string, error) {
	var all []mcpServerConfig
	var warnings []string
	fromCfg, err := mcpFromConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	all = append(all, fromCfg...)
	proj, err := mcpFromProject(root)
	if err != nil {
		warnings = append(warnings, err.Error())
	}
	all = append(all, proj...)
	ed, err := mcpFromACP(acp)
	if err != nil {
		warnings = append(warnings, err.Error())
	}
	all = append(all, ed...)
	seen := map[string]bool{}
	var out []mcpServerConfig
	for _, c := range all {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		c.expand(getenv)
		out = append(out, c)
	}
	// Added after expansion: the token is not a template.
	if lib, ok := mcpFromLogin(cfg, readLogins()); ok && !seen[lib.Name] {
		out = append(out, lib)
	}
	return out, warnings, nil
}

// mcpFromLogin is the instance's library as a server: when config.yaml
// sets no library: and the logins are to exactly one instance, one of whose
// logins' tokens was granted the library scope. Its bearer is that token,
// held here in memory; the entry is never written anywhere. SessionScope
// is left to the session (startSessionMCP): only sessions the link's
// client opened carry _meta.lembas.scope.
func mcpFromLogin(cfg *config, logins []*loginRecord) (mcpServerConfig, bool) {
	if len(logins) == 0 {
		return mcpServerConfig{}, false // no login, no instance library: mcp.json stays unparsed
	}
	sp := theMCP().Library
	if raw, ok := cfg.Raw.(map[string]any); ok {
		if _, set := raw[sp.ConfigKey]; set {
			return mcpServerConfig{}, false
		}
	}
	instances := map[string]bool{}
	var with *loginRecord
	for _, l := range logins {
		instances[strings.TrimRight(l.URL, "/")] = true
		if with == nil && l.Token != "" && l.hasScope(sp.Scope) {
			with = l
		}
	}
	if len(instances) != 1 || with == nil {
		return mcpServerConfig{}, false
	}
	return mcpServerConfig{Name: sp.Server, Source: sp.Source, Enabled: true,
		URL:     strings.TrimRight(with.URL, "/") + sp.Path,
		Headers: map[string]string{"Authorization": "Bearer " + with.Token}}, true
}

// mcpServersIn is the servers a session in dir would start — config.yaml's
// and the project's — for the mcp commands, each warning said on stderr.
func mcpServersIn(dir string, stderr io.Writer) ([]mcpServerConfig, string, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, "", err
	}
	root, err := projectRoot(dir)
	if err != nil {
		return nil, "", usageError{fmt.Sprintf("--cwd %s: %v", dir, err)}
	}
	cfgs, warnings, err := mcpServersFor(cfg, root, nil, os.Getenv)
	if err != nil {
		return nil, "", err
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "lembas: "+w)
	}
	return cfgs, root, nil
}
