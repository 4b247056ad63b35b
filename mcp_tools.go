package main

// A session's MCP servers as tools: the set is started with the session
// (every server at once, in the background, so a prompt can be typed at
// once), and the first model request waits for servers still starting, each
// at most its startup timeout. Then the tools are fixed for the session —
// offered as mcp__<server>__<tool>, sorted, after the built-in tools — so the
// prompt prefix stays still; a server that changes its list later is told
// to the model in a <session-note> and takes effect at the next session.
// When the schemas would take more than schema_share of the context window,
// one search-and-load tool (mcp_tools) is offered in their place.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"sync"
)

// mcpSet is one session's servers and, once fixed, their offered tools.
type mcpSet struct {
	servers []*mcpServer
	vision  bool
	cancel  context.CancelFunc
	ctx     context.Context   // the servers' own, ended by close
	held    []mcpServerConfig // waiting for the person's approval (mcp_approve.go)
	root    string            // the project the held servers are approved for

	mu      mutex
	fixed   bool
	tools   []mcpTool // offered, sorted by offered name
	byName  map[string]mcpTool
	search  bool // the tools are behind mcp_tools
	warned  map[string]bool
	closing sync.Once
}

// startMCP starts every enabled server in the background and returns at
// once; log gets protocol oddities (never tokens).
func startMCP(cfgs []mcpServerConfig, vision bool, log func(string)) *mcpSet {
	ctx, cancel := context.WithCancel(context.Background())
	m := &mcpSet{vision: vision, cancel: cancel, ctx: ctx, byName: map[string]mcpTool{}, warned: map[string]bool{}}
	for _, c := range cfgs {
		s := newMCPServer(c, log)
		m.servers = append(m.servers, s)
		go s.connect(ctx)
	}
	return m
}

// wait blocks until every server has left connecting (each is bounded by
// its own startup timeout) or ctx ends.
func (m *mcpSet) wait(ctx context.Context) {
	for _, s := range m.servers {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return
		}
	}
}

// close ends every server, in parallel, and waits for all of them.
func (m *mcpSet) close() {
	if m == nil {
		return
	}
	m.closing.Do(func() {
		m.cancel()
		var wg sync.WaitGroup
		for _, s := range m.servers {
			wg.Add(1)
			go func(s *mcpServer) {
				defer wg.Done()
				s.close()
			}(s)
		}
		wg.Wait()
	})
}

// server finds a server by name.
func (m *mcpSet) server(name string) *mcpServer {
	for _, s := range m.servers {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

// mcpOfferedName is mcp__<server>__<tool> with characters outside
// [A-Za-z0-9_-] replaced by _, shortened with a hash of the whole name when
// longer than name_max (the limit model APIs set on a function's name).
func mcpOfferedName(server, tool string) string {
	sp := theMCP()
	var b strings.Builder
	for _, r := range tool {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := "mcp__" + server + "__" + b.String()
	max := int(sp.num("name_max"))
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	digits := int(sp.num("name_hash_digits"))
	return name[:max-digits-1] + "_" + hex.EncodeToString(sum[:])[:digits]
}

// fix takes the tools of every ready server, names them, and fixes the
// list for the session. It returns the notices for servers left out.
func (m *mcpSet) fix() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var notes []string
	if m.fixed {
		return nil
	}
	m.fixed = true
	sp := theMCP()
	for _, s := range m.servers {
		state, reason, tools := s.status()
		s.mu.Lock()
		notes = append(notes, s.warnings...) // tools left out for a malformed schema (listTools)
		s.mu.Unlock()
		switch state {
		case "ready":
			for _, t := range tools {
				t.Offered = mcpOfferedName(s.cfg.Name, t.Name)
				if _, dup := m.byName[t.Offered]; dup {
					sum := sha256.Sum256([]byte(t.Name))
					t.Offered = t.Offered[:min(len(t.Offered), int(sp.num("name_max"))-9)] + "_" + hex.EncodeToString(sum[:])[:8]
				}
				m.byName[t.Offered] = t
				m.tools = append(m.tools, t)
			}
		case "disabled":
		case "connecting":
			notes = append(notes, sp.text("failed_notice", "server", s.cfg.Name, "reason", sp.text("startup_timeout", "seconds", s.cfg.StartupTimeout.Seconds())))
		default:
			notes = append(notes, sp.text("failed_notice", "server", s.cfg.Name, "reason", reason))
		}
	}
	sort.Slice(m.tools, func(i, j int) bool { return m.tools[i].Offered < m.tools[j].Offered })
	return notes
}

// toolSpecOf is an MCP tool as the toolbox knows a tool: its schema as the
// server gave it (an object schema when it gave none).
func (m *mcpSet) toolSpecOf(t mcpTool) *toolSpec {
	sp := theMCP()
	s := m.server(t.Server)
	desc := sp.text("no_description", "server", t.Server, "tool", t.Name)
	if strings.TrimSpace(t.Description) != "" {
		desc = sp.text("description", "description", strings.TrimSpace(t.Description), "server", t.Server, "tool", t.Name)
	}
	params := t.Schema
	var probe map[string]any
	if json.Unmarshal(params, &probe) != nil || probe == nil {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return &toolSpec{Name: t.Offered, Scope: "cli", Sessions: "agent", Risk: s.cfg.Risk, Block: "tool",
		Description: desc, Parameters: params, Limits: map[string]float64{}, Texts: map[string]string{}}
}

// impl is the toolbox function that calls one MCP tool.
func (m *mcpSet) impl(t mcpTool) toolFunc {
	return func(tb *toolbox, ctx context.Context, raw json.RawMessage) toolResult {
		return m.server(t.Server).callTool(ctx, t, raw, m.vision)
	}
}

// mcpDefsBytes is the size of the tools array entries the MCP tools add.
func mcpDefsBytes(specs []*toolSpec) int {
	defs, _ := extraDefinitions(specs)
	return len(defs)
}

// searchSpec is the one tool offered in place of many.
func (m *mcpSet) searchSpec() *toolSpec {
	sp := theMCP()
	var servers []string
	for _, s := range m.servers {
		if st, _, _ := s.status(); st == "ready" {
			servers = append(servers, s.cfg.Name)
		}
	}
	desc := fillPairs(sp.SearchTool.Description, "count", len(m.tools), "servers", strings.Join(servers, ", "))
	return &toolSpec{Name: sp.SearchTool.Name, Scope: "cli", Sessions: "agent", Risk: "interact", Block: "tool",
		Description: desc, Parameters: sp.SearchTool.Parameters, Limits: map[string]float64{}, Texts: map[string]string{}}
}

// The search tool runs in the engine (it asks the person about the call it
// makes); its name is mcp.json's, read when a tool is first looked up.
func init() {
	sessionToolsNamed = append(sessionToolsNamed, func() (string, sessionToolFunc) {
		return theMCP().SearchTool.Name, toolMCPSearch
	})
}

// toolMCPSearch searches the session's MCP tools, or calls one: the call is
// judged by the permissions as if the model had called the tool itself.
func toolMCPSearch(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	sp := theMCP()
	m := e.tb.mcp
	var a struct {
		Query     string          `json:"query"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	json.Unmarshal(raw, &a)
	var names []string
	for _, x := range m.tools {
		names = append(names, x.Offered)
	}
	if a.Name != "" {
		mt, ok := m.byName[a.Name]
		if !ok {
			return toolResult{Text: sp.text("search_unknown", "name", a.Name, "names", strings.Join(names, ", ")), IsError: true}
		}
		ts := m.toolSpecOf(mt)
		args, err := checkArgs(ts, a.Arguments, theSpec().Purpose.Schema)
		if err != nil {
			return toolResult{Text: err.Error(), IsError: true}
		}
		d := e.perm.decide(ts, args)
		if d.Verdict == "ask" {
			ans := e.askPerson(ctx, "", ts, args, d)
			switch ans.Choice {
			case "once", "session", "project":
				if ans.Choice != "once" {
					e.perm.remember(ts, d, ans.Choice)
				}
				d.Verdict = "allow"
			default:
				return toolResult{Text: e.perm.refusal(ts, decision{Verdict: "deny", Reason: d.Reason, Rule: d.Rule}, ans), IsError: true, Status: "refused"}
			}
		}
		if d.Verdict == "deny" {
			return toolResult{Text: e.perm.refusal(ts, d, approvalAnswer{}), IsError: true, Status: "refused"}
		}
		return m.server(mt.Server).callTool(ctx, mt, args, m.vision)
	}
	words := strings.Fields(strings.ToLower(a.Query))
	type hit struct {
		t     mcpTool
		score int
	}
	var hits []hit
	for _, x := range m.tools {
		hay := strings.ToLower(x.Offered + " " + x.Description)
		n := 0
		for _, w := range words {
			if strings.Contains(hay, w) {
				n++
			}
		}
		if n > 0 || len(words) == 0 {
			hits = append(hits, hit{x, n})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) == 0 {
		return toolResult{Text: sp.text("search_none", "query", a.Query, "names", strings.Join(names, ", "))}
	}
	if max := int(sp.num("search_results")); len(hits) > max {
		hits = hits[:max]
	}
	var specs []*toolSpec
	for _, h := range hits {
		specs = append(specs, m.toolSpecOf(h.t))
	}
	defs, _ := extraDefinitions(specs)
	return toolResult{Text: sp.text("search_head", "query", a.Query) + "\n" + string(defs)}
}

// mcpModeEntry is the permission hook for the mode: an MCP call whose risk
// is interact is asked in manual, edit and plan (mcp.json modes), since it
// reaches outside lembas; the search tool itself is allowed (the call it
// makes is judged on its own). ok is false for any other tool.
func mcpModeEntry(mode string, t *toolSpec) (verdict, rule string, ok bool) {
	sp := theMCP()
	if t.Name == sp.SearchTool.Name && t.Block == "tool" && t.Risk == "interact" {
		return "allow", "mcp.json search_tool", true
	}
	if !strings.HasPrefix(t.Name, "mcp__") || t.Risk != "interact" {
		return "", "", false
	}
	v := sp.Modes[mode]
	if v == "" {
		v = "ask"
	}
	return v, "mcp.json modes." + mode, true
}

// mcpRuleCovers is the permission hook for rules: mcp__server and
// mcp__server__* cover every tool of the server, mcp__server__tool one
// tool. Rules are written in lower case, so names compare folded.
func mcpRuleCovers(ruleTool, tool string) bool {
	if !strings.HasPrefix(ruleTool, "mcp__") || !strings.HasPrefix(tool, "mcp__") {
		return false
	}
	r, t := strings.ToLower(ruleTool), strings.ToLower(tool)
	switch {
	case r == t:
		return true
	case strings.HasSuffix(r, "__*"):
		return strings.HasPrefix(t, strings.TrimSuffix(r, "*"))
	case strings.Count(r, "__") == 1:
		return strings.HasPrefix(t, r+"__")
	}
	return false
}

// mcpRuleKey says whether a rule's key is an MCP one parseRule may take:
// mcp__ then letters, digits, - and _, optionally ending in __*.
func mcpRuleKey(key string) bool {
	if !strings.HasPrefix(key, "mcp__") {
		return false
	}
	k := strings.TrimSuffix(key, "__*")
	for _, r := range k {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return len(k) > len("mcp__")
}

// startSessionMCP gathers a session's servers and starts them; nil when
// there are none. A broken mcp: section or .mcp.json is told through warn
// and leaves those servers out rather than stopping the session.
// clientOpened: the link's client opened the session, so the instance's
// library (the login's server) scopes its calls by the session's id.
// interactive: a person is there to be shown a login address (not -p).
func startSessionMCP(cfg *config, root string, acp []json.RawMessage, vision, clientOpened, interactive bool, warn func(string), sb *sandbox) *mcpSet {
	say := func(s string) {
		if warn != nil {
			warn(s)
		}
	}
	cfgs, warnings, err := mcpServersFor(cfg, root, acp, os.Getenv)
	if err != nil {
		say(err.Error())
		return nil
	}
	for _, w := range warnings {
		say(w)
	}
	cfgs, held, notes := gateMCP(cfgs, root) // a project's or ACP's program starts once approved (mcp_approve.go)
	if !interactive {
		for _, n := range notes {
			say(n) // -p: nobody can approve; the notice names the command that does
		}
		held = nil
	}
	if len(cfgs) == 0 && len(held) == 0 {
		return nil
	}
	for i := range cfgs {
		if cfgs[i].Source == theMCP().Library.Source && clientOpened {
			cfgs[i].SessionScope = true
		}
		cfgs[i].Interactive, cfgs[i].Warn = interactive, warn
		if cfgs[i].Source != theMCP().Library.Source {
			cfgs[i].Sandbox = sb // lembas's own library server keeps its own state
		}
	}
	m := startMCP(cfgs, vision, nil)
	m.held = held
	m.root = root
	return m
}
