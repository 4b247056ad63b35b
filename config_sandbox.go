package main

// config.yaml's sandbox: section, read with the rest of the config; what
// it means for a command is sandbox.go's.

import "strings"

// sandboxConfig is config.yaml's sandbox: section; nil fields take the
// harness defaults.
type sandboxConfig struct {
	Network  *bool    // network: false cuts the network
	Required *bool    // required: true refuses to run commands with no sandbox
	Writable []string // writable: replaces the default build caches
	HasList  bool     // writable: was given (even empty: no caches)
}

// sandbox reads config.yaml's sandbox: section.
func (d configDecoder) sandbox(n *yamlNode) (sandboxConfig, error) {
	var c sandboxConfig
	m, err := d.entries(n, "sandbox", "network", "required", "writable")
	if err != nil {
		return c, err
	}
	for i, k := range m.keys {
		v := m.items[i]
		switch k.val.(string) {
		case "network":
			c.Network, err = d.flag(v, "sandbox.network")
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
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}
