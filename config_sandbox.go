package main

// config.yaml's sandbox: section, read with the rest of the config; what
// it means for a command is sandbox.go's.

import (
	"strings"
)

// sandboxConfig is config.yaml's sandbox: section; empty fields take the
// harness defaults.
type sandboxConfig struct {
	Off      bool     `json:",omitempty"` // sandbox: off — no OS sandbox for commands (then auto asks, as where none exists)
	Network  string   // on, off, proxy ("": the harness default)
	Allow    []string // network.allow: hosts commands may reach through the proxy
	Required *bool    // required: true refuses to run commands with no sandbox
	Writable []string // writable: folders commands write for real (a build cache among them)
	HasList  bool     // writable: was given (even empty)
	Readable []string `json:",omitempty"` // readable: paths of the home folder commands see in the world besides the project and the tools' (~: all of it)
	Env      []string // env: variable names kept in commands' environment
}

// sandbox reads config.yaml's sandbox: section.
func (d configDecoder) sandbox(n *yamlNode) (sandboxConfig, error) {
	var c sandboxConfig
	if n.kind == yamlScalar && n.val != nil {
		switch n.val {
		case false, "off":
			c.Off = true
			return c, nil
		case true, "on":
			return c, nil
		}
		return c, d.errf(n, "sandbox: expected off, on or a map of network, required, writable, readable, env, found %s", describeNode(n))
	}
	m, err := d.entries(n, "sandbox", "network", "required", "writable", "readable", "env")
	if err != nil {
		return c, err
	}
	for i, k := range m.keys {
		v := m.items[i]
		switch k.val.(string) {
		case "network":
			c.Network, c.Allow, err = d.sandboxNetwork(v)
		case "required":
			c.Required, err = d.flag(v, "sandbox.required")
		case "writable":
			c.HasList = true
			c.Writable, err = d.texts(v, "sandbox.writable", "[~/.cache/go-build, ~/.npm]")
			for j, w := range c.Writable {
				if err == nil && !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "~/") && !strings.HasPrefix(w, "$") && w != "~" {
					err = d.errf(v.items[j], "sandbox.writable.%d: %q is not absolute; use /path, ~/path or $VARIABLE/path", j, w)
				}
			}
		case "readable":
			c.Readable, err = d.texts(v, "sandbox.readable", "[~/src/shared-lib, ~/notes]")
			for j, w := range c.Readable {
				if w == "" && err == nil && v.kind == yamlList && j < len(v.items) && v.items[j].kind == yamlScalar && v.items[j].val == nil {
					c.Readable[j], w = "~", "~" // YAML reads a bare ~ as null; here it means the home folder
				}
				if err == nil && !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "~/") && !strings.HasPrefix(w, "$") && w != "~" {
					err = d.errf(v.items[j], "sandbox.readable.%d: %q is not absolute; use /path, ~/path or $VARIABLE/path", j, w)
				}
			}
		case "env":
			c.Env, err = d.texts(v, "sandbox.env", "[GITHUB_TOKEN]")
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// sandboxNetwork reads sandbox.network: on (or true), off (or false),
// proxy, or a map {allow: [hosts]} — the proxy with those hosts besides the
// registries.
func (d configDecoder) sandboxNetwork(v *yamlNode) (string, []string, error) {
	if v.kind == yamlScalar {
		switch x := v.val.(type) {
		case nil:
			return "", nil, nil
		case bool:
			if x {
				return "on", nil, nil
			}
			return "off", nil, nil
		case string:
			if x == "on" || x == "off" || x == "proxy" {
				return x, nil, nil
			}
		}
		return "", nil, d.errf(v, "sandbox.network: expected on, off, proxy or {allow: [host, …]}, found %s", describeNode(v))
	}
	m, err := d.entries(v, "sandbox.network", "allow")
	if err != nil {
		return "", nil, err
	}
	var allow []string
	for i := range m.keys {
		allow, err = d.texts(m.items[i], "sandbox.network.allow", "[example.com, *.example.org]")
		if err != nil {
			return "", nil, err
		}
		for j, h := range allow {
			if h == "" || strings.ContainsAny(h, "/ :") {
				return "", nil, d.errf(m.items[i].items[j], "sandbox.network.allow.%d: %q is not a host name; use example.com or *.example.com", j, h)
			}
			a, err := allowASCII(h)
			if err != nil {
				return "", nil, d.errf(m.items[i].items[j], "sandbox.network.allow.%d: %q %v", j, h, err)
			}
			allow[j] = a
		}
	}
	return "proxy", allow, nil
}

// allowASCII is an allow entry as the gate compares it: an international
// name (bücher.example, *.bücher.example) in its ASCII form
// (xn--bcher-kva.example), as IDNA's lookup writes it and as curl, Go and
// browsers send it (config_punycode.go) — the gate judges only ASCII names (sandbox_netask.go's
// netHost), so an
// entry left in Unicode would never match. An ASCII entry is kept as
// written. The error says why the name has no ASCII form and what to write.
func allowASCII(h string) (string, error) {
	ascii := true
	for i := 0; i < len(h); i++ {
		ascii = ascii && h[i] < 0x80
	}
	if ascii {
		return h, nil
	}
	wild, rest := "", h
	if r, ok := strings.CutPrefix(h, "*."); ok {
		wild, rest = "*.", r
	}
	a, err := asciiHost(rest)
	if err != nil {
		return "", errorf("is not an international host name lembas can turn into ASCII (%v); write its ASCII form (xn--…, as `idn2` or a browser's address bar shows it)", err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(a, "."), ".") {
		if l == "" {
			return "", errorf("has an empty label (two dots, or a leading one); write it as bücher.example or *.bücher.example")
		}
	}
	return wild + a, nil
}
