package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// configExample is the documented example config.yaml.
const configExample = `# lembas config
model: local/qwen3      # default model
mode: manual
connections:
  local:
    base_url: http://127.0.0.1:8080/v1
    models:
      - qwen3
      - name: big
        context: 131072
        output: 8192
        vision: true
  hosted:
    base_url: "https://api.example.com/v1"
    api_key_env: EXAMPLE_API_KEY
    models: [m1, m2]
permissions:
  allow:
    - "bash: git status"
    - "edit: docs/**"
  ask:  ["bash: git push *"]
  deny: ["read: secrets/**"]
`

// setupConfig points XDG_CONFIG_HOME at a temporary folder and writes
// config.yaml there when content is not empty; it returns the file's path.
func setupConfig(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	path := filepath.Join(dir, "lembas", "config.yaml")
	if content != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// runConfig runs `lembas config args...` and returns its output.
func runConfig(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cmdConfig(args, &out, &errOut)
	return out.String(), err
}

func TestLoadConfigExample(t *testing.T) {
	path := setupConfig(t, configExample+"remote: {enabled: true}\n")
	c, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := &config{
		Path:  path,
		Model: "local/qwen3",
		Mode:  "manual",
		Connections: []connConfig{
			{Name: "local", BaseURL: "http://127.0.0.1:8080/v1", Models: []modelConfig{
				{Name: "qwen3"},
				{Name: "big", Context: 131072, Output: 8192, Vision: &yes},
			}},
			{Name: "hosted", BaseURL: "https://api.example.com/v1", APIKeyEnv: "EXAMPLE_API_KEY", Models: []modelConfig{{Name: "m1"}, {Name: "m2"}}},
		},
		Permissions: permRules{
			Allow: []string{"bash: git status", "edit: docs/**"},
			Ask:   []string{"bash: git push *"},
			Deny:  []string{"read: secrets/**"},
		},
	}
	raw := c.Raw
	c.Raw = nil
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if fk := raw.(map[string]any)["remote"]; !reflect.DeepEqual(fk, map[string]any{"enabled": true}) {
		t.Fatalf("a section read by its owner (remote:) not kept in Raw: %#v", fk)
	}
	// A top-level key no one reads is a typo: an error naming the nearest
	// known key (issue 21), not a setting ignored in silence.
	setupConfig(t, configExample+"mdoel: x\n")
	if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), `unknown key "mdoel"; did you mean "model"?`) {
		t.Fatalf("mdoel: got %v", err)
	}
}

func TestLoadConfigMissingAndAlias(t *testing.T) {
	path := setupConfig(t, "")
	c, err := loadConfig()
	if err != nil || c.Path != path || c.Model != "" || c.Connections != nil {
		t.Fatalf("missing file: %+v, %v", c, err)
	}
	setupConfig(t, "mode: unrestricted\n")
	if c, err := loadConfig(); err != nil || c.Mode != "auto" {
		t.Fatalf("unrestricted: %+v, %v", c, err)
	}
	setupConfig(t, "# nothing yet\n")
	if c, err := loadConfig(); err != nil || c.Raw != nil {
		t.Fatalf("comments only: %+v, %v", c, err)
	}
}

func TestConfigDirs(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "c"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "s"))
	if got := configDir(); got != filepath.Join(dir, "c", "lembas") {
		t.Errorf("configDir = %s", got)
	}
	if got := stateDir(); got != filepath.Join(dir, "s", "lembas") {
		t.Errorf("stateDir = %s", got)
	}
	if got, _ := runConfig(t, "path"); got != filepath.Join(dir, "c", "lembas", "config.yaml")+"\n" {
		t.Errorf("config path printed %q", got)
	}
	if runtime.GOOS == "windows" {
		return
	}
	t.Setenv("HOME", dir)
	for _, v := range []string{"", "relative/path"} {
		t.Setenv("XDG_CONFIG_HOME", v)
		t.Setenv("XDG_STATE_HOME", v)
		if got := configDir(); got != filepath.Join(dir, ".config", "lembas") {
			t.Errorf("XDG_CONFIG_HOME=%q: configDir = %s", v, got)
		}
		if got := stateDir(); got != filepath.Join(dir, ".local", "state", "lembas") {
			t.Errorf("XDG_STATE_HOME=%q: stateDir = %s", v, got)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"- a\n", `1:1: expected settings as "key: value" lines (such as "model: local/qwen3"), found a list`},
		{"model: 7\n", `1:8: model: expected text, found the number 7; put it in quotes`},
		{"model: [a]\n", `1:8: model: expected text, found a list`},
		{"mode: bogus\n", `1:7: mode: unknown mode "bogus"; use one of manual, edit, auto, plan`},
		{"connections: [a]\n", `1:14: connections: expected a map of connection names to settings, found a list`},
		{"connections:\n  local:\n    models: [a]\n", `2:3: connections.local: base_url is required, as in "base_url: http://127.0.0.1:8080/v1"`},
		{"connections:\n  local:\n", `2:3: connections.local: base_url is required, as in "base_url: http://127.0.0.1:8080/v1"`},
		{"connections:\n  a/b:\n    base_url: http://x\n", `2:3: connections.a/b: a connection name cannot be empty or contain "/" or spaces; rename it`},
		{"connections:\n  l:\n    base_url: ftp://x\n", `3:15: connections.l.base_url: expected an http:// or https:// URL such as http://127.0.0.1:8080/v1, found "ftp://x"`},
		{"connections:\n  l:\n    base_url: http://x\n    api_key_env: sk-123\n", `4:18: connections.l.api_key_env: expected the name of an environment variable (such as EXAMPLE_API_KEY), not the key itself`},
		{"connections:\n  l:\n    base_url: http://x\n    api_key: sk-123\n", `4:5: connections.l: api_key is not read from the file; put the key in an environment variable and name it with api_key_env`},
		{"connections:\n  l:\n    base_url: http://x\n    base-url: y\n", `4:5: connections.l: unknown key "base-url"; did you mean "base_url"?`},
		{"connections:\n  l:\n    base_url: http://x\n    models: m1\n", `4:13: connections.l.models: expected a list of model names such as [m1, m2], found the text "m1"`},
		{"connections:\n  l:\n    base_url: http://x\n    models:\n      - name: big\n        context: lots\n", `6:18: connections.l.models.0.context: expected a whole number above 0 such as 131072, found the text "lots"`},
		{"connections:\n  l:\n    base_url: http://x\n    models:\n      - name: big\n        vision: yes\n", `6:17: connections.l.models.0.vision: expected true or false, found the text "yes"`},
		{"connections:\n  l:\n    base_url: http://x\n    models:\n      - context: 5\n", `5:9: connections.l.models.0: name is required, as in "- name: big"`},
		{"connections:\n  l:\n    base_url: http://x\n    models: [a, a]\n", `4:17: connections.l.models.1: model "a" is listed twice; keep one`},
		{"connections:\n  l:\n    base_url: http://x\n    models: [{name: a, efforts: low}]\n", `4:33: connections.l.models.0.efforts: expected a list such as [low, medium, high], found the text "low"`},
		{"permissions:\n  allow: \"bash: ls\"\n", `2:10: permissions.allow: expected a list such as ["bash: git status"], found the text "bash: ls"`},
		{"permissions:\n  allow: [1]\n", `2:11: permissions.allow.0: expected text, found the number 1; put it in quotes`},
		{"permissions:\n  alow: []\n", `2:3: permissions: unknown key "alow"; did you mean "allow"?`},
	} {
		path := setupConfig(t, c.doc)
		_, err := loadConfig()
		if err == nil || err.Error() != path+":"+c.want {
			t.Errorf("%q:\n got %v\nwant %s:%s", c.doc, err, path, c.want)
		}
	}
}

func TestConfigGet(t *testing.T) {
	setupConfig(t, configExample)
	for key, want := range map[string]string{
		"model":                              "local/qwen3\n",
		"connections.local.base_url":         "http://127.0.0.1:8080/v1\n",
		"connections.local.models.1.context": "131072\n",
		"connections.local.models.1.vision":  "true\n",
		"permissions.allow.0":                "bash: git status\n",
		"connections.hosted.models":          "- m1\n- m2\n",
		"connections.local.models":           "- qwen3\n- name: big\n  context: 131072\n  output: 8192\n  vision: true\n",
		"permissions.ask":                    "- \"bash: git push *\"\n",
	} {
		got, err := runConfig(t, "get", key)
		if err != nil || got != want {
			t.Errorf("get %s = %q, %v; want %q", key, got, err, want)
		}
	}
	for _, key := range []string{"nope", "model.x", "permissions.allow.9", "permissions.allow.x"} {
		if _, err := runConfig(t, "get", key); err == nil || !strings.Contains(err.Error(), "is not set in") {
			t.Errorf("get %s: %v", key, err)
		}
	}
}

func TestConfigList(t *testing.T) {
	setupConfig(t, configExample)
	got, err := runConfig(t, "list")
	want := `model = local/qwen3
mode = manual
connections.local.base_url = http://127.0.0.1:8080/v1
connections.local.models.0 = qwen3
connections.local.models.1.name = big
connections.local.models.1.context = 131072
connections.local.models.1.output = 8192
connections.local.models.1.vision = true
connections.hosted.base_url = https://api.example.com/v1
connections.hosted.api_key_env = EXAMPLE_API_KEY
connections.hosted.models.0 = m1
connections.hosted.models.1 = m2
permissions.allow.0 = "bash: git status"
permissions.allow.1 = "edit: docs/**"
permissions.ask.0 = "bash: git push *"
permissions.deny.0 = "read: secrets/**"
`
	if err != nil || got != want {
		t.Fatalf("list: %v\n%s", err, got)
	}
	setupConfig(t, "")
	if got, err := runConfig(t, "list"); err != nil || got != "" {
		t.Fatalf("list of no file: %q, %v", got, err)
	}
}

func TestConfigUsage(t *testing.T) {
	setupConfig(t, "")
	for _, args := range [][]string{nil, {"bogus"}, {"get"}, {"set", "model"}, {"set", "a", "b", "c"}, {"list", "x"}, {"get", "a..b"}} {
		_, err := runConfig(t, args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "lembas config") && !strings.Contains(err.Error(), "dotted path") {
			t.Errorf("%q: %v", args, err)
		}
	}
	for _, h := range []string{"-h", "--help", "help"} {
		if out, err := runConfig(t, h); err != nil || !strings.HasPrefix(out, "usage: lembas config") {
			t.Errorf("%s: %q %v", h, out, err)
		}
	}
}

// setAndDiff runs `config set` and returns the file after it, checking
// the file kept mode 0600.
func setAndDiff(t *testing.T, path, key, value string) string {
	t.Helper()
	if _, err := runConfig(t, "set", key, value); err != nil {
		t.Fatalf("set %s %q: %v", key, value, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	return string(data)
}

func TestConfigSetInPlace(t *testing.T) {
	for _, c := range []struct{ key, value, old, new string }{
		{"model", "hosted/m1", "model: local/qwen3      # default model", "model: hosted/m1      # default model"},
		{"mode", "unrestricted", "mode: manual", "mode: unrestricted"},
		{"connections.hosted.base_url", "http://h:1/v1", `    base_url: "https://api.example.com/v1"`, "    base_url: http://h:1/v1"},
		{"connections.local.models.1.context", "65536", "        context: 131072", "        context: 65536"},
		{"connections.local.models.1.vision", "false", "        vision: true", "        vision: false"},
		{"connections.local.models.0", "qwen3.5", "      - qwen3", "      - qwen3.5"},
		{"connections.hosted.models.1", "m 3", "    models: [m1, m2]", "    models: [m1, m 3]"},
		{"connections.hosted.models", "[x, y, z]", "    models: [m1, m2]", "    models: [x, y, z]"},
		{"permissions.ask.0", "bash: git push origin", `  ask:  ["bash: git push *"]`, `  ask:  ["bash: git push origin"]`},
		{"permissions.allow.1", "edit: src/**", `    - "edit: docs/**"`, `    - "edit: src/**"`},
		{"permissions.deny", `["read: .env"]`, `  deny: ["read: secrets/**"]`, `  deny: ["read: .env"]`},
	} {
		path := setupConfig(t, configExample)
		got := setAndDiff(t, path, c.key, c.value)
		want := strings.Replace(configExample, c.old+"\n", c.new+"\n", 1)
		if want == configExample {
			t.Fatalf("bad test: %q not in example", c.old)
		}
		if got != want {
			t.Errorf("set %s %q:\n%s", c.key, c.value, got)
		}
	}
}

func TestConfigSetAdds(t *testing.T) {
	for _, c := range []struct{ key, value, after, add string }{
		{"connections.local.api_key_env", "LOCAL_KEY", "        vision: true\n", "    api_key_env: LOCAL_KEY\n"},
		{"connections.local.models.2", "small", "        vision: true\n", "      - small\n"},
		{"connections.local.models.1.tools", "true", "        vision: true\n", "        tools: true\n"},
		{"permissions.allow.2", "read: **", `    - "edit: docs/**"` + "\n", `    - "read: **"` + "\n"},
		{"connections.other.base_url", "http://o/v1", `    models: [m1, m2]` + "\n", "  other:\n    base_url: http://o/v1\n"},
		{"remote.theme.name", "dark", `  deny: ["read: secrets/**"]` + "\n", "remote:\n  theme:\n    name: dark\n"},
		{"remote.count", "3", `  deny: ["read: secrets/**"]` + "\n", "remote:\n  count: \"3\"\n"},
	} {
		path := setupConfig(t, configExample)
		got := setAndDiff(t, path, c.key, c.value)
		want := strings.Replace(configExample, c.after, c.after+c.add, 1)
		if got != want {
			t.Errorf("set %s %q:\n%s", c.key, c.value, got)
		}
	}
	// flow lists and maps grow inline
	// (the keys are ones config.yaml knows but parseConfig leaves to their
	// owners, so only the YAML editing is under test)
	path := setupConfig(t, "remote: [x]\nmcp: []\nlibrary: {k: 1}\nembedding: {}\n")
	setAndDiff(t, path, "remote.1", "y z")
	setAndDiff(t, path, "mcp.0", "q")
	setAndDiff(t, path, "library.j", "v")
	if got := setAndDiff(t, path, "embedding.e.f", "w"); got != "remote: [x, y z]\nmcp: [q]\nlibrary: {k: 1, j: v}\nembedding: {e: {f: w}}\n" {
		t.Errorf("flow adds:\n%s", got)
	}
	// empty values fill in
	path = setupConfig(t, "permissions:\nmodel: ~ # later\nremote:\n  - \n")
	setAndDiff(t, path, "permissions.allow.0", "bash: ls")
	setAndDiff(t, path, "model", "m")
	if got := setAndDiff(t, path, "remote.0", "v"); got != "permissions:\n  allow:\n    - \"bash: ls\"\nmodel: m # later\nremote:\n  - v\n" {
		t.Errorf("null fills:\n%q", got)
	}
}

func TestConfigSetFreshFile(t *testing.T) {
	path := setupConfig(t, "")
	got := setAndDiff(t, path, "connections.local.base_url", "http://127.0.0.1:8080/v1")
	got = setAndDiff(t, path, "model", "local/qwen3")
	if got != "connections:\n  local:\n    base_url: http://127.0.0.1:8080/v1\nmodel: local/qwen3\n" {
		t.Fatalf("fresh file:\n%s", got)
	}
	if c, err := loadConfig(); err != nil || c.Connections[0].BaseURL != "http://127.0.0.1:8080/v1" {
		t.Fatalf("reload: %+v %v", c, err)
	}
	// a file of comments, without a final line break, and with CRLF
	path = setupConfig(t, "# mine\r\n# no break")
	if got := setAndDiff(t, path, "mode", "plan"); got != "# mine\r\n# no break\r\nmode: plan\r\n" {
		t.Fatalf("crlf: %q", got)
	}
}

func TestConfigSetRefuses(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"mode", "bogus", `mode: unknown mode "bogus"; use one of manual, edit, auto, plan`},
		{"connections.local.models.1.context", "big", `context: expected a whole number above 0 such as 131072, found the text "big"`},
		{"connections.local.base_url", "", `base_url is required`},
		{"connections.local.models", "x", `is a list written over several lines`},
		{"connections", "{}", `is a map written over several lines; set its keys one by one, as in connections.local`},
		{"model.name", "x", `model is a text setting with no keys under it (lembas config set model VALUE)`},
		{"permissions.allow.5", "x", `permissions.allow has 2 items; to add one use index 2`},
		{"permissions.allow.x", "x", `permissions.allow is a list; address its items by number`},
		{"new.1", "x", `there is no list at 1 yet; start one with index 0`},
		{"connections.hosted.models.0.name", "x", `is the text "m1", not a map`},
	} {
		path := setupConfig(t, configExample)
		_, err := runConfig(t, "set", c.key, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "config set: ") {
			t.Errorf("set %s %q: %v", c.key, c.value, err)
		}
		if data, _ := os.ReadFile(path); string(data) != configExample {
			t.Errorf("set %s %q changed the file", c.key, c.value)
		}
	}
	path := setupConfig(t, "a: [b\n")
	if _, err := runConfig(t, "set", "model", "x"); err == nil || !strings.Contains(err.Error(), "fix the file first") {
		t.Errorf("broken file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "a: [b\n" {
		t.Errorf("broken file changed")
	}
}

// TestConfigSetQuotes checks awkward values come back exactly.
func TestConfigSetQuotes(t *testing.T) {
	path := setupConfig(t, configExample)
	for _, v := range []string{"a: b", "7", "true", "", " pad ", "x # y", "line\nbreak", `q"uote`, "'", "[x]", "*"} {
		setAndDiff(t, path, "model", v)
		setAndDiff(t, path, "permissions.ask.0", v)
		if got, err := runConfig(t, "get", "model"); err != nil || got != v+"\n" {
			t.Errorf("model %q read back %q %v", v, got, err)
		}
		if got, err := runConfig(t, "get", "permissions.ask.0"); err != nil || got != v+"\n" {
			t.Errorf("ask %q read back %q %v", v, got, err)
		}
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "# lembas config\nmodel: \"*\"      # default model\n") {
		t.Errorf("comment lost:\n%s", data)
	}
}

// TestConfigSetConcurrent: many sets at once, each of its own key, all
// land — none overwrites another's result.
func TestConfigSetConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("# mine\nmodel: a/b\n"), 0o600)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- configSet(path, fmt.Sprintf("remote.k%d", i), fmt.Sprintf("v%d", i))
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(path)
	for i := 0; i < 20; i++ {
		if !strings.Contains(string(data), fmt.Sprintf("k%d: v%d", i, i)) {
			t.Errorf("set %d was lost:\n%s", i, data)
		}
	}
	if !strings.HasPrefix(string(data), "# mine\nmodel: a/b\n") {
		t.Errorf("the file's own lines changed:\n%s", data)
	}
}

// TestSetTrustKeepsAnUnreadableFile: a trust file that is not JSON is
// reported, never written over (that would forget every other answer).
func TestSetTrustKeepsAnUnreadableFile(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	if err := setTrust("/a", true); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(trustFile(), []byte("{not json"), 0o600)
	if err := setTrust("/b", true); err == nil || !strings.Contains(err.Error(), "fix or remove it") {
		t.Fatalf("setTrust over a broken file: %v", err)
	}
	if b, _ := os.ReadFile(trustFile()); string(b) != "{not json" {
		t.Errorf("the broken file was written over: %q", b)
	}
}
