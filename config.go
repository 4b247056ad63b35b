package main

// config.yaml: where lembas keeps a person's settings (default model and
// mode, the OpenAI-compatible servers it talks to, standing permission
// rules), how it reads them with positions for every mistake, and the
// `lembas config` command that reads and edits the file without disturbing
// its comments.
//
// Floor 2 (persistence and config): it calls only the ground (yaml.go,
// atomic.go, errors.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

type config struct {
	Path         string       // the file it came from
	Model        string       // model: a model ref such as "local/qwen3" or a bare name
	Mode         string       // mode: manual|edit|auto|plan ("unrestricted" reads as "auto")
	IdleTimeoutS int          // idle_timeout: seconds of silence from the model server before a request is abandoned
	Connections  []connConfig // connections: name -> connection, in file order
	Permissions  permRules    // permissions: {allow: [..], ask: [..], deny: [..]}
	Raw          any          // the whole parsed document, for `config get`

	Sandbox sandboxConfig // sandbox: {network, required, writable} (sandbox.go)

	Personalization personalization // personality, personality_custom, instructions (config_personality.go)
}

type connConfig struct {
	Name      string
	BaseURL   string        // base_url (required)
	APIKeyEnv string        // api_key_env: name of an environment variable holding the key
	Models    []modelConfig // models: a list of names, or of maps with name + overrides
}

type modelConfig struct {
	Name     string
	Context  int      // context (tokens)
	Output   int      // output (max output tokens)
	Vision   *bool    // vision
	Patch    *bool    // patch: the model edits by patch (apply_patch offered)
	Tools    *bool    // tools
	Thinking *bool    // thinking_switch
	Efforts  []string // efforts
	Parallel int      // parallel
}

type permRules struct{ Allow, Ask, Deny []string }

const configUsage = `usage: lembas config get KEY | set KEY VALUE | list | path

  get KEY        print one setting; KEY is a dotted path such as
                 connections.local.base_url, with numbers for list items
                 (permissions.allow.0); lists and maps print as YAML
  set KEY VALUE  change or add one setting in config.yaml, keeping comments
                 and every other line as they are; a new list item takes
                 the next free index
  list           print every setting as "key = value", in file order
  path           print where config.yaml is
`

const configUsageLine = "use: lembas config get KEY | set KEY VALUE | list | path"

// configDir follows the XDG base directory spec so lembas's config sits
// with everything else's: $XDG_CONFIG_HOME/lembas, else ~/.config/lembas,
// and on Windows the roaming AppData folder when XDG is unset. Relative
// XDG values are ignored, as the spec asks.
func configDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "lembas")
	}
	if runtime.GOOS == "windows" {
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, "lembas")
		}
	}
	return filepath.Join(homeDir(), ".config", "lembas")
}

// stateDir is where lembas keeps what it writes for itself (sessions,
// logs): $XDG_STATE_HOME/lembas, else ~/.local/state/lembas, and on
// Windows a "state" folder inside the config folder when XDG is unset.
func stateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "lembas")
	}
	if runtime.GOOS == "windows" {
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, "lembas", "state")
		}
	}
	return filepath.Join(homeDir(), ".local", "state", "lembas")
}

// homeDir falls back to the current folder when no home is known (a bare
// container), so lembas still runs rather than failing on startup.
//
//go:noinline
func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return h
	}
	return "."
}

// configPath is the one config file lembas reads and `config set` writes.
func configPath() string { return filepath.Join(configDir(), "config.yaml") }

// loadConfig reads configDir()/config.yaml. A missing file is an empty
// config, so lembas works before anyone has written one.
func loadConfig() (*config, error) {
	path := configPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &config{Path: path}, nil
	}
	if err != nil {
		return nil, errorf("read config: %w", err)
	}
	return parseConfig(data, path)
}

// parseConfig parses and checks a config file's bytes; path names the file
// in errors. Top-level keys read elsewhere (mcp:, remote:, embedding:,
// library:) are kept in Raw for their owners; a key no one reads is a typo
// and an error naming the nearest known key (harness/config.json), as is
// an unknown key inside a known section.
func parseConfig(data []byte, path string) (*config, error) {
	root, err := parseYAMLNode(data, path)
	if err != nil {
		return nil, err
	}
	c := &config{Path: path, Raw: root.value()}
	d := configDecoder{path}
	if root.kind == yamlScalar && root.val == nil {
		return c, nil
	}
	if root.kind != yamlMap {
		return nil, d.errf(root, "expected settings as \"key: value\" lines (such as \"model: local/qwen3\"), found %s", describeNode(root))
	}
	for i, k := range root.keys {
		v := root.items[i]
		switch k.val.(string) {
		case "model":
			c.Model, err = d.text(v, "model")
		case "mode":
			c.Mode, err = d.mode(v)
		case "idle_timeout":
			c.IdleTimeoutS, err = d.seconds(v, "idle_timeout")
		case "connections":
			c.Connections, err = d.connections(v)
		case "permissions":
			c.Permissions, err = d.permissions(v)
		case "sandbox":
			c.Sandbox, err = d.sandbox(v)
		case "personality", "personality_custom", "instructions":
			err = d.personalityKey(v, k.val.(string), &c.Personalization)
		default:
			err = d.unknownTop(k)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// configKeysSpec is harness/config.json: config.yaml's top-level keys and
// the words of a yes/no setting.
type configKeysSpec struct {
	About   string   `json:"about"`
	TopKeys []string `json:"top_keys"`
	On      []string `json:"on"`
	Off     []string `json:"off"`
}

var (
	configKeysOnce sync.Once
	configKeysVal  *configKeysSpec
	configKeysErr  error
)

func theConfigKeys() *configKeysSpec {
	configKeysOnce.Do(func() {
		configKeysVal = &configKeysSpec{}
		configKeysErr = decodeStrict(harnessFS, "harness/config.json", configKeysVal)
	})
	if configKeysErr != nil {
		panic("harness: " + configKeysErr.Error())
	}
	return configKeysVal
}

// unknownTop is the error for a top-level key lembas does not read, or nil
// for one an owner elsewhere reads from Raw.
func (d configDecoder) unknownTop(k *yamlNode) error {
	name, _ := k.val.(string)
	keys := theConfigKeys().TopKeys
	for _, t := range keys {
		if t == name {
			return nil
		}
	}
	return d.errf(k, "unknown key %q%s", name, didYouMean(name, keys))
}

// parseOnOff reads a yes/no setting's value (on/off, true/false, yes/no);
// anything else is an error naming the words it takes, so a typo never
// quietly means off.
func parseOnOff(key, v string) (bool, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	ck := theConfigKeys()
	for _, w := range ck.On {
		if v == w {
			return true, nil
		}
	}
	for _, w := range ck.Off {
		if v == w {
			return false, nil
		}
	}
	return false, errorf("%s: expected on or off, found %q", key, v)
}

// configDecoder turns nodes into config fields, pinning each complaint to
// the offending value's line and column.
type configDecoder struct{ path string }

// errf makes a yamlError so config mistakes read like parse mistakes:
// file:line:col, then the key and the fix.
//
//go:noinline
func (d configDecoder) errf(n *yamlNode, format string, args ...any) error {
	return &yamlError{d.path, n.line, n.col, fmt.Sprintf(format, args...)}
}

// describeNode names what a value is, for "expected X, found Y" messages.
func describeNode(n *yamlNode) string {
	switch n.kind {
	case yamlMap:
		return "a map"
	case yamlList:
		return "a list"
	}
	switch v := n.val.(type) {
	case nil:
		return "nothing"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return fmt.Sprintf("the text %q", v)
	}
	return "the number " + yamlScalarText(n.val, false)
}

// seconds reads a whole, positive number of seconds.
func (d configDecoder) seconds(n *yamlNode, key string) (int, error) {
	if n.kind == yamlScalar {
		switch v := n.val.(type) {
		case int:
			if v > 0 {
				return v, nil
			}
		case int64:
			if v > 0 {
				return int(v), nil
			}
		case float64:
			if v > 0 && v == float64(int(v)) {
				return int(v), nil
			}
		}
	}
	return 0, d.errf(n, "%s: expected a whole number of seconds above 0 (such as 300), found %s", key, describeNode(n))
}

// text reads an optional string; null reads as "".
func (d configDecoder) text(n *yamlNode, key string) (string, error) {
	if n.kind == yamlScalar {
		switch v := n.val.(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		}
		return "", d.errf(n, "%s: expected text, found %s; put it in quotes", key, describeNode(n))
	}
	return "", d.errf(n, "%s: expected text, found %s", key, describeNode(n))
}

// mode reads mode:, mapping aliases kept for older config files.
func (d configDecoder) mode(n *yamlNode) (string, error) {
	s, err := d.text(n, "mode")
	if err != nil || s == "" {
		return s, err
	}
	// The modes and their aliases are the spec's (permission/modes.json).
	ms := theSpec().Modes
	if a, ok := ms.Aliases[s]; ok {
		s = a
	}
	if _, ok := ms.Modes[s]; ok {
		return s, nil
	}
	return "", d.errf(n, "mode: unknown mode %q; use one of %s", s, strings.Join(ms.Order, ", "))
}

// entries checks that n is a map (or null, for an empty section) and
// rejects keys outside allowed, naming the ones that are.
func (d configDecoder) entries(n *yamlNode, key string, allowed ...string) (*yamlNode, error) {
	if n.kind == yamlScalar && n.val == nil {
		return &yamlNode{kind: yamlMap}, nil
	}
	if n.kind != yamlMap {
		return nil, d.errf(n, "%s: expected a map of %s, found %s", key, strings.Join(allowed, ", "), describeNode(n))
	}
	for _, k := range n.keys {
		name := k.val.(string)
		found := false
		for _, a := range allowed {
			found = found || a == name
		}
		if !found {
			return nil, d.errf(k, "%s: unknown key %q%s", key, name, didYouMean(name, allowed))
		}
	}
	return n, nil
}

// connections reads the servers lembas can talk to, in file order, which
// is also the order model lists and pickers show them in.
func (d configDecoder) connections(n *yamlNode) ([]connConfig, error) {
	if n.kind == yamlScalar && n.val == nil {
		return nil, nil
	}
	if n.kind != yamlMap {
		return nil, d.errf(n, "connections: expected a map of connection names to settings, found %s", describeNode(n))
	}
	var out []connConfig
	for i, k := range n.keys {
		name := k.val.(string)
		key := "connections." + name
		if name == "" || strings.ContainsAny(name, "/ \t") {
			return nil, d.errf(k, "%s: a connection name cannot be empty or contain \"/\" or spaces; rename it", key)
		}
		v := n.items[i]
		if v.kind == yamlMap && v.get("api_key") != nil {
			return nil, d.errf(v.keys[indexOfKey(v, "api_key")], "%s: api_key is not read from the file; put the key in an environment variable and name it with api_key_env", key)
		}
		m, err := d.entries(v, key, "base_url", "api_key_env", "models")
		if err != nil {
			return nil, err
		}
		c := connConfig{Name: name}
		for j, ck := range m.keys {
			cv := m.items[j]
			switch ck.val.(string) {
			case "base_url":
				c.BaseURL, err = d.text(cv, key+".base_url")
				if u, perr := url.Parse(c.BaseURL); err == nil && c.BaseURL != "" && (perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
					err = d.errf(cv, "%s.base_url: expected an http:// or https:// URL such as http://127.0.0.1:8080/v1, found %q", key, c.BaseURL)
				}
			case "api_key_env":
				c.APIKeyEnv, err = d.text(cv, key+".api_key_env")
				if err == nil && !isEnvName(c.APIKeyEnv) {
					err = d.errf(cv, "%s.api_key_env: expected the name of an environment variable (such as EXAMPLE_API_KEY), not the key itself", key)
				}
			case "models":
				c.Models, err = d.models(cv, key+".models")
			}
			if err != nil {
				return nil, err
			}
		}
		if c.BaseURL == "" {
			return nil, d.errf(k, "%s: base_url is required, as in \"base_url: http://127.0.0.1:8080/v1\"", key)
		}
		out = append(out, c)
	}
	return out, nil
}

// indexOfKey finds a key's position in a map node, for pointing at it.
func indexOfKey(m *yamlNode, key string) int {
	for i, k := range m.keys {
		if k.val == key {
			return i
		}
	}
	return -1
}

// isEnvName accepts portable environment variable names: letters, digits
// and underscores, not starting with a digit.
func isEnvName(s string) bool {
	for i, c := range s {
		if !(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return s != ""
}

// models reads a list whose items are model names or maps of a name and
// the metadata that overrides what lembas knows about the model.
func (d configDecoder) models(n *yamlNode, key string) ([]modelConfig, error) {
	if n.kind == yamlScalar && n.val == nil {
		return nil, nil
	}
	if n.kind != yamlList {
		return nil, d.errf(n, "%s: expected a list of model names such as [m1, m2], found %s", key, describeNode(n))
	}
	var out []modelConfig
	seen := map[string]bool{}
	for i, it := range n.items {
		ik := fmt.Sprintf("%s.%d", key, i)
		var mc modelConfig
		var err error
		if it.kind == yamlMap {
			mc, err = d.model(it, ik)
		} else if mc.Name, err = d.text(it, ik); err == nil && mc.Name == "" {
			err = d.errf(it, "%s: expected a model name or a map with name:, found nothing", ik)
		}
		if err != nil {
			return nil, err
		}
		if seen[mc.Name] {
			return nil, d.errf(it, "%s: model %q is listed twice; keep one", ik, mc.Name)
		}
		seen[mc.Name] = true
		out = append(out, mc)
	}
	return out, nil
}

// model reads one "- name: ..." entry; every field but name is optional
// and overrides what lembas knows about the model.
func (d configDecoder) model(n *yamlNode, key string) (modelConfig, error) {
	var mc modelConfig
	m, err := d.entries(n, key, "name", "context", "output", "vision", "patch", "tools", "thinking_switch", "efforts", "parallel")
	if err != nil {
		return mc, err
	}
	for i, k := range m.keys {
		v, fk := m.items[i], key+"."+k.val.(string)
		switch k.val.(string) {
		case "name":
			mc.Name, err = d.text(v, fk)
		case "context":
			mc.Context, err = d.count(v, fk, "131072")
		case "output":
			mc.Output, err = d.count(v, fk, "8192")
		case "parallel":
			mc.Parallel, err = d.count(v, fk, "4")
		case "vision":
			mc.Vision, err = d.flag(v, fk)
		case "patch":
			mc.Patch, err = d.flag(v, fk)
		case "tools":
			mc.Tools, err = d.flag(v, fk)
		case "thinking_switch":
			mc.Thinking, err = d.flag(v, fk)
		case "efforts":
			mc.Efforts, err = d.texts(v, fk, "[low, medium, high]")
		}
		if err != nil {
			return mc, err
		}
	}
	if mc.Name == "" {
		return mc, d.errf(n, "%s: name is required, as in \"- name: big\"", key)
	}
	return mc, nil
}

// count reads an optional positive whole number; null reads as 0 (unset).
func (d configDecoder) count(n *yamlNode, key, example string) (int, error) {
	if n.kind == yamlScalar && n.val == nil {
		return 0, nil
	}
	if v, ok := n.val.(int64); ok && n.kind == yamlScalar && v > 0 && int64(int(v)) == v {
		return int(v), nil
	}
	return 0, d.errf(n, "%s: expected a whole number above 0 such as %s, found %s", key, example, describeNode(n))
}

// flag reads an optional boolean; null reads as nil (unset).
func (d configDecoder) flag(n *yamlNode, key string) (*bool, error) {
	if n.kind == yamlScalar && n.val == nil {
		return nil, nil
	}
	if v, ok := n.val.(bool); ok && n.kind == yamlScalar {
		return &v, nil
	}
	return nil, d.errf(n, "%s: expected true or false, found %s", key, describeNode(n))
}

// texts reads an optional list of strings.
func (d configDecoder) texts(n *yamlNode, key, example string) ([]string, error) {
	if n.kind == yamlScalar && n.val == nil {
		return nil, nil
	}
	if n.kind != yamlList {
		return nil, d.errf(n, "%s: expected a list such as %s, found %s", key, example, describeNode(n))
	}
	var out []string
	for i, it := range n.items {
		s, err := d.text(it, fmt.Sprintf("%s.%d", key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// permissions reads the standing allow/ask/deny rules; the rule syntax is
// checked where rules are matched, not here.
func (d configDecoder) permissions(n *yamlNode) (permRules, error) {
	var p permRules
	m, err := d.entries(n, "permissions", "allow", "ask", "deny")
	if err != nil {
		return p, err
	}
	for i, k := range m.keys {
		key := k.val.(string)
		rules, err := d.texts(m.items[i], "permissions."+key, `["bash: git status"]`)
		if err != nil {
			return p, err
		}
		switch key {
		case "allow":
			p.Allow = rules
		case "ask":
			p.Ask = rules
		case "deny":
			p.Deny = rules
		}
	}
	return p, nil
}

// cmdConfig is `lembas config`. get and list need only a file that parses
// as YAML, so they still work on a config with a bad setting in it; set
// checks the whole config before writing anything.
func cmdConfig(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"config: missing subcommand; " + configUsageLine}
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" || (len(args) > 1 && (args[1] == "-h" || args[1] == "--help")) {
		fmt.Fprint(stdout, configUsage)
		return nil
	}
	want := map[string]int{"get": 2, "set": 3, "list": 1, "path": 1}
	n, ok := want[args[0]]
	if !ok {
		return usageError{fmt.Sprintf("config: unknown subcommand %q; %s", args[0], configUsageLine)}
	}
	if len(args) != n {
		forms := map[string]string{"get": "config get KEY", "set": "config set KEY VALUE (quote a VALUE with spaces)", "list": "config list", "path": "config path"}
		return usageError{fmt.Sprintf("config %s: expected %d argument(s), got %d; use: lembas %s", args[0], n-1, len(args)-1, forms[args[0]])}
	}
	path := configPath()
	switch args[0] {
	case "path":
		fmt.Fprintln(stdout, path)
		return nil
	case "set":
		return configSet(path, args[1], args[2])
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("config %s: %w", args[0], err)
	}
	root, err := parseYAMLNode(data, path)
	if err != nil {
		return errorf("config %s: %w", args[0], err)
	}
	if args[0] == "list" {
		walkLeaves(root, "", func(key string, n *yamlNode) {
			fmt.Fprintf(stdout, "%s = %s\n", key, yamlInline(n))
		})
		return nil
	}
	segs, err := splitConfigKey(args[1])
	if err != nil {
		return err
	}
	n2 := lookupNode(root, segs)
	if n2 == nil {
		return errorf("config get: %s is not set in %s; see `lembas config list`", args[1], path)
	}
	if s, ok := n2.val.(string); ok && n2.kind == yamlScalar {
		fmt.Fprintln(stdout, s)
	} else if n2.kind == yamlScalar {
		fmt.Fprintln(stdout, yamlScalarText(n2.val, false))
	} else {
		fmt.Fprint(stdout, formatYAML(n2))
	}
	return nil
}

// splitConfigKey splits a dotted key; keys containing dots cannot be
// addressed, which the config's own keys never need.
func splitConfigKey(key string) ([]string, error) {
	segs := strings.Split(key, ".")
	for _, s := range segs {
		if s == "" || strings.ContainsAny(s, "\n\r") {
			return nil, usageError{fmt.Sprintf("config: bad key %q; write a dotted path such as connections.local.base_url or permissions.allow.0", key)}
		}
	}
	return segs, nil
}

// listIndex reads a list index segment: decimal digits only.
func listIndex(seg string) (int, bool) {
	if strings.Trim(seg, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(seg)
	return i, err == nil
}

// lookupNode follows a dotted path through maps (by key) and lists (by
// index); nil when any step is missing.
func lookupNode(n *yamlNode, segs []string) *yamlNode {
	for _, s := range segs {
		switch n.kind {
		case yamlMap:
			n = n.get(s)
		case yamlList:
			i, ok := listIndex(s)
			if !ok || i >= len(n.items) {
				return nil
			}
			n = n.items[i]
		default:
			return nil
		}
		if n == nil {
			return nil
		}
	}
	return n
}

// walkLeaves calls fn for every scalar and empty collection in file order,
// with its dotted key.
func walkLeaves(n *yamlNode, prefix string, fn func(key string, n *yamlNode)) {
	join := func(s string) string {
		if prefix == "" {
			return s
		}
		return prefix + "." + s
	}
	switch {
	case n.kind == yamlScalar && prefix == "" && n.val == nil:
		// an empty file has no settings
	case n.kind == yamlScalar || len(n.items) == 0:
		fn(prefix, n)
	case n.kind == yamlMap:
		for i, k := range n.keys {
			walkLeaves(n.items[i], join(k.val.(string)), fn)
		}
	default:
		for i, it := range n.items {
			walkLeaves(it, join(strconv.Itoa(i)), fn)
		}
	}
}

// Trust: the answers to "do you trust this folder?", asked by the REPL,
// set by lembas trust, and read by the library, MCP and the link.

// trustFile is where the answers to "do you trust this folder?" are kept.
func trustFile() string { return filepath.Join(stateDir(), "trust.json") }

// trustOf says whether a project folder is trusted, and whether the
// person was ever asked.
func trustOf(root string) (trusted, known bool) {
	if _, ok := untrustedThisRun.Load(root); ok {
		return false, true
	}
	var m map[string]bool
	if data, err := os.ReadFile(trustFile()); err == nil {
		json.Unmarshal(data, &m)
	}
	t, ok := m[root]
	return t, ok
}

// untrustedThisRun holds the folders this process treats as untrusted
// without remembering it: the REPL on plain input never asks (what is
// piped in is the prompt), so a new folder is untrusted until the person
// answers on a terminal or runs lembas trust.
var untrustedThisRun sync.Map

func untrustForRun(root string) { untrustedThisRun.Store(root, true) }

// setTrust records a folder's trust answer. A trust file that cannot be
// read is never written over: that would forget every other folder's.
func setTrust(root string, trusted bool) error {
	m := map[string]bool{}
	data, err := os.ReadFile(trustFile())
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &m); err != nil {
			return errorf("%s is not a list of trusted folders (%v); fix or remove it, then answer again", trustFile(), err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return errorf("reading %s: %w", trustFile(), err)
	}
	m[root] = trusted
	data = rawJSONIndent(m)
	if err := os.MkdirAll(stateDir(), 0o700); err != nil {
		return errorf("saving the trust of %s: %w", root, err)
	}
	if err := writeFileAtomic(trustFile(), append(data, '\n'), 0o600); err != nil {
		return errorf("saving the trust of %s: %w", root, err)
	}
	return nil
}

// rawJSONIndent is v (a map of ours, which always encodes) indented.
func rawJSONIndent(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}
