package main

// The offer area: which tools a session is offered, from what it begins
// with (harness/conformance/offer.json). Each case builds the library,
// memory and sessions it names in fresh folders, decides the offer as a
// session does (sessionOffer), and answers which of the asked tools are
// in the list the model is sent.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"
)

type offerCase struct {
	Headless bool   `json:"headless"`
	Mode     string `json:"mode"`
	Notes    []struct {
		Scope   string `json:"scope"`   // project or global
		Project string `json:"project"` // "this" (default) or "other"
	} `json:"notes"`
	Skill          bool     `json:"skill"`           // a skill in the person's skills folder
	Knowledge      bool     `json:"knowledge"`       // a knowledge source
	Memory         string   `json:"memory"`          // "user" or "project": one record there
	EarlierSession string   `json:"earlier_session"` // "this" or "other": a session of that project
	Kept           []string `json:"kept"`            // a decision the session already keeps (resumed)
	Login          bool     `json:"login"`           // an instance is logged in to
	Front          bool     `json:"front"`           // a front end that implements show adds it where its offer holds (the REPL)
	Model          string   `json:"model"`           // the model named (--model), "" none
	Config         string   `json:"config"`          // config.yaml's text, "" none
	ProjectHost    string   `json:"project_host"`    // a host this project allowed with "always here" (network.json)
	Tools          []string `json:"tools"`           // the tools asked about
	PropertiesOf   string   `json:"properties_of"`   // a tool whose sent properties are answered too
}

func init() {
	conformanceRunners["offer"] = func(in json.RawMessage) (any, error) {
		var c offerCase
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		base, err := os.MkdirTemp("", "lembas-offer")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(base)
		for k, v := range map[string]string{"XDG_STATE_HOME": filepath.Join(base, "state"), "XDG_CONFIG_HOME": filepath.Join(base, "config")} {
			old, had := os.LookupEnv(k)
			os.Setenv(k, v)
			defer func() {
				if had {
					os.Setenv(k, old)
				} else {
					os.Unsetenv(k)
				}
			}()
		}
		root := filepath.Join(base, "proj")
		other := filepath.Join(base, "other")
		os.MkdirAll(root, 0o755)
		now := time.Now()
		for _, n := range c.Notes {
			nt := &note{ID: newNoteID(), Title: "t", Scope: n.Scope, Content: "c", Created: now, Updated: now}
			if n.Scope != "global" {
				nt.Scope, nt.Project = "project", root
				if n.Project == "other" {
					nt.Project = other
				}
			}
			if err := saveNote(nt); err != nil {
				return nil, err
			}
		}
		if c.Skill {
			dir := filepath.Join(base, "config", "lembas", "skills", "release")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: release\ndescription: cut a release\n---\nsteps\n"), 0o644)
		}
		if c.Knowledge {
			if err := saveSources([]knowledgeSource{{ID: "k1", Path: base, Added: now}}); err != nil {
				return nil, err
			}
		}
		if c.Memory != "" {
			err := memoryFor(root).(*localMemory).apply(func(r map[string][]memRecord) (map[string][]memRecord, error) {
				r[c.Memory] = []memRecord{{Text: "a fact"}}
				return r, nil
			})
			if err != nil {
				return nil, err
			}
		}
		if c.Login {
			if err := saveLogin(&loginRecord{Name: "home", URL: "https://llembas.example", Token: "t"}); err != nil {
				return nil, err
			}
		}
		st := newStore(filepath.Join(base, "sessions"), nil)
		defer st.close()
		if c.EarlierSession != "" {
			proj := root
			if c.EarlierSession == "other" {
				proj = other
			}
			if _, err := st.create(proj); err != nil {
				return nil, err
			}
		}
		sess := &session{ID: "20261201-000000-000001", Project: root}
		if c.Kept != nil {
			sess.Offer = &offerDecision{Held: c.Kept}
		}
		mode := c.Mode
		if mode == "" {
			mode = "auto"
		}
		cfg, err := parseConfig([]byte(c.Config), filepath.Join(base, "config.yaml"))
		if err != nil {
			return nil, err
		}
		noEnv := func(string) string { return "" }
		sb := newSandbox(cfg.Sandbox, root)
		if c.ProjectHost != "" {
			if err := newSandbox(cfg.Sandbox, root).allowProject(c.ProjectHost); err != nil {
				return nil, err
			}
		}
		perm := permissionsFor(mode, root, c.Headless, cfg)
		webOK := func() bool { return webReaches(sb, perm) }
		tb, err := newToolboxFor(root, false, sessionOffer(sess, root, mode, c.Headless, st, namePatches(cfg, c.Model, noEnv), webOK))
		if err != nil {
			return nil, err
		}
		if c.Front {
			if _, err := tb.offerHeldFrontTool(theSpec().Tools["show"], nil); err != nil {
				return nil, err
			}
		}
		offered := map[string]bool{}
		for _, t := range tb.tools {
			offered[t.Name] = true
		}
		out := []string{}
		for _, name := range c.Tools {
			if offered[name] {
				out = append(out, name)
			}
		}
		if c.PropertiesOf == "" {
			return map[string]any{"offered": out}, nil
		}
		var defs []struct {
			Function struct {
				Name       string `json:"name"`
				Parameters struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tb.defs, &defs); err != nil {
			return nil, err
		}
		props := []string{}
		for _, d := range defs {
			if d.Function.Name == c.PropertiesOf {
				for k := range d.Function.Parameters.Properties {
					props = append(props, k)
				}
			}
		}
		sort.Strings(props)
		return map[string]any{"offered": out, "properties": props}, nil
	}
}
