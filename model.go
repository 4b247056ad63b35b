package main

// Model connections and the OpenAI-compatible streaming client.
//
// A model ref is <connection>/<model>. Connections come, in this order,
// from config.yaml, from OPENAI_BASE_URL (+ OPENAI_API_KEY), and from
// local servers found on their usual loopback ports. The client streams
// chat completions over SSE and folds each server's quirks
// (harness/quirks.json) into one shape: text, reasoning, tool calls, usage.
//
// A worker (floor 3): it calls the store's records, the config (and its
// logins) and the ground.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// connection is one OpenAI-compatible server.
type connection struct {
	Name    string
	BaseURL string // ends without a slash, e.g. http://127.0.0.1:8080/v1
	APIKey  string
	KeyHint string // where the key comes from, for error messages
	Source  string // config, env, local
	Models  []modelConfig
	http    *http.Client
	Idle    time.Duration // silence after which a request is abandoned (config idle_timeout, else loop.json idle_s)

	listOnce  sync.Once
	listed    []string
	listErr   error
	embedding string // the first model the server lists as kind embedding (the library's, never talked to)
}

// localServers are the usual loopback ports of local model servers, probed
// so that a person with a local model gets an answer with no configuration.
var localServers = []struct{ name, url string }{
	{"llamacpp", "http://127.0.0.1:8080/v1"},
	{"ollama", "http://127.0.0.1:11434/v1"},
	{"lmstudio", "http://127.0.0.1:1234/v1"},
	{"vllm", "http://127.0.0.1:8000/v1"},
}

// newHTTPClient is a client on the process's pool of connections to model
// servers. A transport per session (connections() runs for each) kept its
// idle keep-alive connections, and their two goroutines each, for ever:
// under the service that grew with every session. One pool reuses them
// across sessions, and drops those idle past keepalive_s.
func newHTTPClient() *http.Client {
	lp := theSpec().Loop.Timeouts
	return &http.Client{Transport: modelTransports.get(fmt.Sprint(lp), func() *http.Transport {
		return &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: time.Duration(lp.ConnectMS) * time.Millisecond}).DialContext,
			ResponseHeaderTimeout: time.Duration(lp.FirstByteS) * time.Second,
			IdleConnTimeout:       time.Duration(lp.KeepaliveS) * time.Second,
			MaxIdleConnsPerHost:   4,
			ForceAttemptHTTP2:     true,
		}
	})}
}

// transportPool is the process's transports, one per set of loop.json
// timeouts (in a release there is one set; tests that change them get a
// transport of their own): a pool, like the process's sockets, not state
// of any one session or service.
type transportPool struct {
	mu mutex
	by map[string]*http.Transport
}

var modelTransports transportPool

func (p *transportPool) get(key string, newT func() *http.Transport) *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.by[key]; t != nil {
		return t
	}
	if p.by == nil {
		p.by = map[string]*http.Transport{}
	}
	t := newT()
	p.by[key] = t
	return t
}

// connections lists the configured connections: config.yaml, then the
// environment. Local servers are added by probeLocal, only when needed.
func connections(cfg *config, getenv func(string) string) []*connection {
	out := connectionsOf(cfg, getenv)
	for _, c := range out {
		if cfg != nil && cfg.IdleTimeoutS > 0 {
			c.Idle = time.Duration(cfg.IdleTimeoutS) * time.Second
		}
	}
	return out
}

// withScheme reads a base URL written without its scheme
// ("127.0.0.1:8080/v1") as http://, the way people type a local server's
// address, rather than failing on a URL parse error.
func withScheme(u string) string {
	if u == "" || strings.Contains(u, "://") {
		return u
	}
	return "http://" + u
}

func connectionsOf(cfg *config, getenv func(string) string) []*connection {
	client := newHTTPClient()
	var out []*connection
	for _, c := range cfg.Connections {
		key, hint := "", "the server's settings"
		if c.APIKeyEnv != "" {
			key, hint = getenv(c.APIKeyEnv), "$"+c.APIKeyEnv
		}
		out = append(out, &connection{Name: c.Name, BaseURL: withScheme(strings.TrimRight(c.BaseURL, "/")),
			APIKey: key, KeyHint: hint, Source: "config", Models: c.Models, http: client})
	}
	if base := getenv("OPENAI_BASE_URL"); base != "" && findConn(out, "openai") == nil {
		out = append(out, &connection{Name: "openai", BaseURL: withScheme(strings.TrimRight(base, "/")),
			APIKey: getenv("OPENAI_API_KEY"), KeyHint: "$OPENAI_API_KEY", Source: "env", http: client})
	}
	out = append(out, loginConnections(client, out)...) // login.go: each instance login is a connection
	return out
}

// probeLocal asks every usual local port at once, with a short timeout, and
// returns the servers that answered a model list.
func probeLocal(ctx context.Context, have []*connection) []*connection {
	timeout := time.Duration(theSpec().Loop.Timeouts.ProbeMS) * time.Millisecond
	client := newHTTPClient()
	found := make([]*connection, len(localServers))
	var wg sync.WaitGroup
	for i, ls := range localServers {
		if findConn(have, ls.name) != nil || haveURL(have, ls.url) {
			continue
		}
		wg.Add(1)
		go func(i int, name, url string) {
			defer wg.Done()
			c := &connection{Name: name, BaseURL: url, KeyHint: "the server's settings", Source: "local", http: client}
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ids, err := c.fetchModels(pctx)
			if err != nil {
				return
			}
			c.listOnce.Do(func() { c.listed = ids })
			found[i] = c
		}(i, ls.name, ls.url)
	}
	wg.Wait()
	var out []*connection
	for _, c := range found {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

//go:noinline
func findConn(cs []*connection, name string) *connection {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func haveURL(cs []*connection, url string) bool {
	for _, c := range cs {
		if strings.TrimRight(c.BaseURL, "/") == url {
			return true
		}
	}
	return false
}

// models returns the model ids of a connection: the ones config.yaml
// declares, else the server's own list (asked once).
func (c *connection) models(ctx context.Context) ([]string, error) {
	if len(c.Models) > 0 {
		var ids []string
		for _, m := range c.Models {
			ids = append(ids, m.Name)
		}
		return ids, nil
	}
	c.listOnce.Do(func() { c.listed, c.listErr = c.fetchModels(ctx) })
	return c.listed, c.listErr
}

// modelNotes is what models/schema.json notes of a model, "" for none.
func modelNotes(id string) string {
	if k := knownModel(strings.ToLower(id)); k != nil {
		return k.Notes
	}
	return ""
}

// knownModel is the first of models/schema.json's entries whose match fits
// the (lower-case) id, nil for none.
func knownModel(lower string) *modelMeta {
	known := theSpec().Models.Known
	for i := range known {
		if ok, _ := path.Match(known[i].Match, lower); ok {
			return &known[i]
		}
	}
	return nil
}

// thinksByDefault says whether quirks.json's thinking-default names the
// (lower-case) model: one that thinks unless told not to.
func thinksByDefault(lower string) bool {
	thinkingQuirkOnce.Do(func() {
		data, err := fs.ReadFile(harnessFS, "harness/quirks.json")
		if err == nil {
			err = json.Unmarshal(data, &thinkingQuirk)
		}
		if err != nil {
			panic("harness: quirks.json: " + err.Error()) // embedded: TestQuirks catches it first
		}
	})
	for _, r := range thinkingQuirk.Requests {
		if r.ID != "thinking-default" {
			continue
		}
		for _, pat := range r.Models {
			if ok, _ := path.Match(pat, lower); ok {
				return true
			}
		}
	}
	return false
}

// thinkingQuirk is quirks.json as the model's metadata reads it: the
// request quirks' model patterns (context_quirks.go reads the rest, and
// TestQuirks reads the file strictly).
var (
	thinkingQuirkOnce sync.Once
	thinkingQuirk     struct {
		Requests []struct {
			ID     string   `json:"id"`
			Models []string `json:"models"`
		} `json:"requests"`
	}
)

// fetchModels asks GET /models.
func (c *connection) fetchModels(ctx context.Context) ([]string, error) {
	idle := c.Idle
	if idle <= 0 {
		idle = time.Duration(theSpec().Loop.Timeouts.IdleS) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, idle) // a server that accepts and never answers
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.BaseURL+"/models", nil)
	if err != nil {
		return nil, err
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, errorf("GET %s/models: HTTP %d", c.BaseURL, resp.StatusCode)
	}
	var body struct {
		Data []struct {
			ID   string `json:"id"`
			Kind string `json:"kind"` // chat, embedding, stt, tts, image; absent: chat (acp.md, GET /v1/models)
		} `json:"data"`
		Models []struct { // Ollama's native shape, in case a proxy passes it on
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&body); err != nil {
		return nil, errorf("GET %s/models: %v", c.BaseURL, err)
	}
	var ids []string
	for _, d := range body.Data {
		switch d.Kind {
		case "", "chat":
			ids = append(ids, d.ID) // a model lembas talks to
		case "embedding":
			if c.embedding == "" {
				c.embedding = d.ID
			}
		} // any other kind is not lembas's
	}
	for _, m := range body.Models {
		ids = append(ids, m.Name)
	}
	return ids, nil
}

// modelRef is a resolved model: where it is served and what it can do.
type modelRef struct {
	Conn  *connection
	Model string
	Meta  modelMeta
}

//go:noinline
func (r *modelRef) String() string { return r.Conn.Name + "/" + r.Model }

// chooseModel picks the model of a session: name is --model, else
// LEMBAS_MODEL, else config.yaml's model; empty means the first model of the
// first connection that answers.
func chooseModel(ctx context.Context, cfg *config, name string, getenv func(string) string) (*modelRef, error) {
	if name == "" {
		name = getenv("LEMBAS_MODEL")
	}
	if name == "" {
		name = cfg.Model
	}
	conns := connections(cfg, getenv)
	errs := theSpec().Loop.ModelErrors
	if name == "" {
		for _, tier := range [][]*connection{conns, nil} {
			if tier == nil {
				tier = probeLocal(ctx, conns)
			}
			for _, c := range tier {
				ids, err := c.models(ctx)
				if err == nil && len(ids) > 0 {
					return newModelRef(c, ids[0]), nil
				}
			}
		}
		if len(conns) > 0 {
			// A connection was named (config.yaml, OPENAI_BASE_URL) and
			// nothing answered there: say where, not that there is none.
			return nil, errorNew(fillPairs(errs["refused"], "connection", conns[0].Name, "url", conns[0].BaseURL))
		}
		return nil, errorNew(errs["no_model"])
	}
	// <connection>/<model>, the connection named first.
	if i := strings.IndexByte(name, '/'); i > 0 {
		if c := findConn(conns, name[:i]); c != nil {
			return newModelRef(c, name[i+1:]), nil
		}
	}
	ref, err := findModel(ctx, conns, name)
	if ref != nil || err != nil {
		return ref, err
	}
	local := probeLocal(ctx, conns)
	if i := strings.IndexByte(name, '/'); i > 0 {
		if c := findConn(local, name[:i]); c != nil {
			return newModelRef(c, name[i+1:]), nil
		}
	}
	ref, err = findModel(ctx, local, name)
	if ref != nil || err != nil {
		return ref, err
	}
	// A lone connection that cannot list its models (some servers have no
	// /models) is taken to serve the name it was given.
	if len(conns) == 1 && len(local) == 0 {
		if _, lerr := conns[0].models(ctx); lerr != nil {
			return newModelRef(conns[0], name), nil
		}
	}
	if i := strings.IndexByte(name, '/'); i > 0 && strings.IndexByte(name[i+1:], '/') < 0 {
		return nil, errorNew(fillPairs(errs["unknown_connection"], "connection", name[:i]))
	}
	return nil, errorNew(fillPairs(errs["model_not_found"], "model", name))
}

// findModel looks for exactly one model of that id among the connections.
func findModel(ctx context.Context, conns []*connection, name string) (*modelRef, error) {
	var hits []*modelRef
	for _, c := range conns {
		ids, err := c.models(ctx)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if id == name {
				hits = append(hits, newModelRef(c, id))
			}
		}
	}
	switch len(hits) {
	case 0:
		return nil, nil
	case 1:
		return hits[0], nil
	}
	var refs []string
	for _, h := range hits {
		refs = append(refs, h.String())
	}
	return nil, errorNew(fillPairs(theSpec().Loop.ModelErrors["model_ambiguous"], "model", name, "refs", strings.Join(refs, ", ")))
}

// newModelRef works out the model's metadata: the spec's defaults, the
// first known entry matching its id, the thinking-default quirk, then
// config.yaml's overrides.
func newModelRef(c *connection, model string) *modelRef {
	ms := theSpec().Models
	m := ms.Defaults
	lower := strings.ToLower(model)
	k := knownModel(lower)
	if k != nil {
		m = mergeMeta(m, *k)
	}
	if (k == nil || k.ThinkingSwitch == nil) && thinksByDefault(lower) {
		on := true
		m.ThinkingSwitch = &on // quirks.json thinking-default: off must send enable_thinking: false
	}
	for _, mc := range c.Models {
		if mc.Name == model {
			m = mergeMeta(m, modelMeta{Context: mc.Context, Output: mc.Output, Efforts: mc.Efforts,
				ThinkingSwitch: mc.Thinking, Vision: mc.Vision, Patch: mc.Patch, Tools: mc.Tools, Parallel: mc.Parallel})
		}
	}
	return &modelRef{Conn: c, Model: model, Meta: m}
}

func mergeMeta(a, b modelMeta) modelMeta {
	if b.Context > 0 {
		a.Context = b.Context
	}
	if b.Output > 0 {
		a.Output = b.Output
	}
	if b.Efforts != nil {
		a.Efforts = b.Efforts
	}
	if b.ThinkingSwitch != nil {
		a.ThinkingSwitch = b.ThinkingSwitch
	}
	if b.Vision != nil {
		a.Vision = b.Vision
	}
	if b.Patch != nil {
		a.Patch = b.Patch
	}
	if b.Tools != nil {
		a.Tools = b.Tools
	}
	if b.Parallel > 0 {
		a.Parallel = b.Parallel
	}
	return a
}

func (m modelMeta) vision() bool { return m.Vision != nil && *m.Vision }

func (m modelMeta) patches() bool { return m.Patch != nil && *m.Patch }

// namePatches says, from the model's name alone, whether it edits by patch
// (models/schema.json patch, then config.yaml's models list): the offer is
// decided while the model is looked up, so nothing here waits for a
// server. A model not named yet (the first a server lists) does not.
func namePatches(cfg *config, name string, getenv func(string) string) bool {
	if name == "" {
		name = getenv("LEMBAS_MODEL")
	}
	if name == "" {
		name = cfg.Model
	}
	if name == "" {
		return false
	}
	m := theSpec().Models.Defaults
	k := knownModel(strings.ToLower(name))
	if _, id, ok := strings.Cut(name, "/"); k == nil && ok {
		k = knownModel(strings.ToLower(id)) // <connection>/<model>
	}
	if k != nil {
		m = mergeMeta(m, *k)
	}
	for _, c := range connections(cfg, getenv) {
		id := name
		if conn, rest, ok := strings.Cut(name, "/"); ok && conn == c.Name {
			id = rest
		}
		for _, mc := range c.Models {
			if mc.Name == id && mc.Patch != nil {
				m.Patch = mc.Patch
			}
		}
	}
	return m.patches()
}

// cmdModels prints every model ref and where it came from.
func cmdModels(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, "usage: lembas models\n\nLists every model ref (<connection>/<model>) and where its connection came from:\nconfig.yaml, the environment (OPENAI_BASE_URL), or a local server on a usual port.")
			return nil
		}
		return usageError{"models takes no arguments; usage: lembas models"}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conns := connections(cfg, os.Getenv)
	conns = append(conns, probeLocal(ctx, conns)...)
	if len(conns) == 0 {
		return errorNew(theSpec().Loop.ModelErrors["no_model"])
	}
	for _, c := range conns {
		ids, err := c.models(ctx)
		from := c.Source
		switch c.Source {
		case "env":
			from = "environment (OPENAI_BASE_URL)"
		case "local":
			from = "local server at " + c.BaseURL
		case "config":
			from = "config.yaml"
		}
		if err != nil {
			fmt.Fprintf(stdout, "%s/?\t%s: cannot list models: %v\n", c.Name, from, err)
			continue
		}
		sort.Strings(ids)
		for _, id := range ids {
			fmt.Fprintf(stdout, "%s/%s\t%s\n", c.Name, id, from)
			if n := modelNotes(id); n != "" {
				fmt.Fprintf(stdout, "  %s\n", n)
			}
		}
		if c.embedding != "" {
			fmt.Fprintln(stdout, fillPairs(theSpec().Models.Texts["embedding_line"], "ref", c.Name+"/"+c.embedding, "from", from))
		}
	}
	return nil
}

// ---- the streaming client ----

// chatRequest is what one request sends; Messages are already in wire form.
// The messages come last, so a request's body starts with the previous
// request's bytes up to the end of its last message (context.md §1.4).
type chatRequest struct {
	Model         string          `json:"model"`
	Tools         json.RawMessage `json:"tools,omitempty"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	MaxTokens int            `json:"max_tokens,omitempty"`
	Messages  []wireMessage  `json:"messages"`
	Extra     map[string]any `json:"-"`
}

// wireMessage is one message as sent.
type wireMessage struct {
	Role             string     `json:"role"`
	Content          any        `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
}

// reply is one assembled answer of the model.
type reply struct {
	Text      string
	Reasoning string
	Calls     []toolCall
	Finish    string
	Usage     usage
}

// streamDelta is one chunk of a chat completion stream, loose enough for
// every server we know (harness/quirks.json).
type streamDelta struct {
	Choices []struct {
		Delta struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptCacheHit      int `json:"prompt_cache_hit_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// assembler folds stream deltas into a reply.
type assembler struct {
	r       reply
	byIndex map[int]int // delta index → position in r.Calls
	last    int         // position of the call a fragment without index continues
	whole   map[int]bool
}

func newAssembler() *assembler {
	return &assembler{byIndex: map[int]int{}, last: -1, whole: map[int]bool{}}
}

// add folds one chunk in; onText and onReasoning see the pieces as they come.
func (a *assembler) add(d *streamDelta, onText, onReasoning func(string)) {
	if d.Usage != nil {
		u := usage{Input: d.Usage.PromptTokens, Output: d.Usage.CompletionTokens, Cached: d.Usage.PromptCacheHit}
		if d.Usage.PromptTokensDetails != nil && d.Usage.PromptTokensDetails.CachedTokens > 0 {
			u.Cached = d.Usage.PromptTokensDetails.CachedTokens
		}
		a.r.Usage = u
	}
	for _, ch := range d.Choices {
		dl := ch.Delta
		if dl.Content != nil && *dl.Content != "" {
			a.r.Text += *dl.Content
			if onText != nil {
				onText(*dl.Content)
			}
		}
		rs := dl.ReasoningContent
		if rs == nil {
			rs = dl.Reasoning
		}
		if rs != nil && *rs != "" {
			a.r.Reasoning += *rs
			if onReasoning != nil {
				onReasoning(*rs)
			}
		}
		for _, tc := range dl.ToolCalls {
			pos := -1
			switch {
			case tc.Index != nil:
				if p, ok := a.byIndex[*tc.Index]; ok {
					pos = p
				}
			case a.last >= 0:
				// No index: a fragment continues the last call, unless it
				// carries another call's id, or a new name once the last
				// call has a name and arguments.
				lc := &a.r.Calls[a.last]
				pos = a.last
				if tc.ID != "" && lc.ID != "" && tc.ID != lc.ID {
					pos = -1
				} else if tc.ID == "" && tc.Function.Name != "" && lc.Function.Name != "" &&
					tc.Function.Name != lc.Function.Name && lc.Function.Arguments != "" {
					pos = -1
				}
			}
			if pos < 0 {
				a.r.Calls = append(a.r.Calls, toolCall{Type: "function"})
				pos = len(a.r.Calls) - 1
				if tc.Index != nil {
					a.byIndex[*tc.Index] = pos
				}
			}
			a.last = pos
			c := &a.r.Calls[pos]
			if tc.ID != "" && c.ID == "" {
				c.ID = tc.ID
			}
			if tc.Function.Name != "" && c.Function.Name == "" {
				c.Function.Name = tc.Function.Name
			}
			args := tc.Function.Arguments
			if len(args) == 0 || string(args) == "null" {
				continue
			}
			if args[0] == '"' {
				var s string
				if json.Unmarshal(args, &s) == nil {
					if !a.whole[pos] {
						c.Function.Arguments += s
					}
				}
			} else {
				// Arguments as a whole object (Ollama): it is the whole call.
				c.Function.Arguments = string(args)
				a.whole[pos] = true
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.r.Finish = *ch.FinishReason
		}
	}
}

// finish settles what the stream left loose: calls without ids get one, ""
// arguments become {}, and a stream that called tools is a tool_calls
// finish whatever finish_reason said.
func (a *assembler) finish() reply {
	for i := range a.r.Calls {
		c := &a.r.Calls[i]
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", i+1)
		}
		if strings.TrimSpace(c.Function.Arguments) == "" {
			c.Function.Arguments = "{}"
		}
	}
	if len(a.r.Calls) > 0 {
		a.r.Finish = "tool_calls"
	}
	return a.r
}

// modelError is a request that failed, with the sentence a person reads.
type modelError struct {
	Kind   string // auth, unknown_model, rate_limited, server, bad_request, refused, timeout, cut, idle, context_length
	Status int
	Msg    string
	Detail string // what the server said, cut (rate_limited, server: the sentence is made once the tries end)
	Conn   string
}

func (e *modelError) Error() string { return e.Msg }

type quietKey struct{}

// withQuietNotice has a request call say after loop.json's quiet_notice_s
// of silence from the server that it still waits (lembas -p, where no
// progress line counts the seconds).
func withQuietNotice(ctx context.Context, say func(string)) context.Context {
	return context.WithValue(ctx, quietKey{}, say)
}

type answeringKey struct{}

// withAnswering has f called each time the server has begun to answer a
// request (its headers are in): work that can wait for the model, no
// longer than that, goes there (startup.go).
func withAnswering(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, answeringKey{}, f)
}

// idleWatch abandons a request when the server sends nothing for idle —
// before its headers or between two pieces of its answer — and says once,
// after quiet, that it still waits. poke restarts both clocks.
type idleWatch struct {
	fired     atomic.Bool
	said      atomic.Bool // the quiet notice was given: once a request
	idle      *time.Timer
	quiet     *time.Timer
	idleD, qD time.Duration
}

func startIdleWatch(ctx context.Context, idle time.Duration, cancel func(), conn string) *idleWatch {
	w := &idleWatch{idleD: idle}
	w.idle = time.AfterFunc(idle, func() { w.fired.Store(true); cancel() })
	if say, ok := ctx.Value(quietKey{}).(func(string)); ok {
		q := time.Duration(theSpec().Loop.Timeouts.QuietNoticeS) * time.Second
		if q >= idle {
			q = idle / 2 // a short idle_timeout still gets its notice first
		}
		if q > 0 {
			w.qD = q
			w.quiet = time.AfterFunc(q, func() {
				w.said.Store(true)
				say(fillPairs(theSpec().Loop.ModelErrors["quiet"], "connection", conn, "seconds", int(q.Seconds()), "idle", int(idle.Seconds())))
			})
		}
	}
	return w
}

func (w *idleWatch) poke() {
	w.idle.Reset(w.idleD)
	if w.quiet != nil && !w.said.Load() {
		w.quiet.Reset(w.qD)
	}
}

func (w *idleWatch) stop() {
	w.idle.Stop()
	if w.quiet != nil {
		w.quiet.Stop()
	}
}

// stream sends one chat request and streams the answer, retrying 429 and
// 5xx with bounded backoff (honouring Retry-After) as long as nothing of the
// answer has arrived. onRetry is told before each wait.
func (r *modelRef) stream(ctx context.Context, req *chatRequest, onText, onReasoning func(string), onRetry func(attempt int, wait time.Duration, err error)) (reply, error) {
	lp := theSpec().Loop
	req.Model = r.Model
	req.Stream = true
	req.StreamOptions = &struct {
		IncludeUsage bool `json:"include_usage"`
	}{true}
	body, err := marshalRequest(req)
	if err != nil {
		return reply{}, err
	}
	var lastErr error
	shownDetail, attemptsMade := "", 0
	for attempt := 1; ; attempt++ {
		attemptsMade = attempt
		t0 := time.Now()
		rep, retryAfter, err := r.streamOnce(ctx, body, onText, onReasoning)
		traceSince(t0, "model request: %d bytes sent", len(body))
		if err == nil {
			return rep, nil
		}
		lastErr = err
		var me *modelError
		if !errors.As(err, &me) || (me.Kind != "rate_limited" && me.Kind != "server") || attempt >= lp.Retry.Attempts || ctx.Err() != nil {
			break
		}
		wait := time.Duration(lp.Retry.BaseMS) * time.Millisecond << (attempt - 1)
		if max := time.Duration(lp.Retry.MaxMS) * time.Millisecond; wait > max {
			wait = max
		}
		if retryAfter > 0 {
			wait = retryAfter
			if max := time.Duration(lp.Retry.RetryAfterMaxS) * time.Second; wait > max {
				wait = max
			}
		}
		if onRetry != nil {
			// Each retry says which try comes next; what the server said is
			// shown the first time, and again only when it changes.
			detail := ""
			if me.Detail != shownDetail {
				detail, shownDetail = me.Detail, me.Detail
			}
			onRetry(attempt, wait, &modelError{Kind: me.Kind, Status: me.Status, Msg: retryText(me, detail)})
		}
		select {
		case <-ctx.Done():
			return reply{}, ctx.Err()
		case <-time.After(wait):
		}
	}
	var me *modelError
	if errors.As(lastErr, &me) && (me.Kind == "rate_limited" || me.Kind == "server") {
		detail := ""
		if me.Detail != shownDetail {
			detail = " (" + me.Detail + ")"
		}
		n := min(attemptsMade, lp.Retry.Attempts)
		me.Msg = fillPairs(lp.ModelErrors[me.Kind], "connection", me.Conn, "status", me.Status, "detail", detail,
			"tries", fmt.Sprintf("%d %s", n, plural(n, "try", "tries")))
	}
	return reply{}, lastErr
}

// retryText is what one failed try says before the next: the status, and
// the server's words when they are new.
func retryText(me *modelError, detail string) string {
	if detail != "" {
		detail = ": " + detail
	}
	return fillPairs(theSpec().Loop.ModelErrors["retry_"+me.Kind], "connection", me.Conn, "status", me.Status, "detail", detail)
}

// marshalRequest writes the request with its extra top-level fields (the
// effort level's settings) first, in a fixed order, and the request's own
// fields after them as the struct orders them — messages last.
func marshalRequest(req *chatRequest) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil || len(req.Extra) == 0 {
		return body, err
	}
	keys := make([]string, 0, len(req.Extra))
	for k := range req.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(req.Extra[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		b.WriteByte(',')
	}
	b.Write(body[1:])
	return []byte(b.String()), nil
}

func (r *modelRef) streamOnce(ctx context.Context, body []byte, onText, onReasoning func(string)) (reply, time.Duration, error) {
	lp := theSpec().Loop
	errs := lp.ModelErrors
	c := r.Conn
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, "POST", c.BaseURL+"/chat/completions", strings.NewReader(string(body)))
	if err != nil {
		return reply{}, 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set("User-Agent", "lembas/"+version)
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	idle := c.Idle
	if idle <= 0 {
		idle = time.Duration(lp.Timeouts.IdleS) * time.Second
	}
	watch := startIdleWatch(ctx, idle, cancel, c.Name)
	defer watch.stop()
	idleErr := func() error {
		return &modelError{Kind: "idle", Msg: fillPairs(errs["idle"], "connection", c.Name, "seconds", int(idle.Seconds()))}
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		if watch.fired.Load() {
			return reply{}, 0, idleErr()
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return reply{}, 0, err
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return reply{}, 0, &modelError{Kind: "timeout", Msg: fillPairs(errs["timeout"], "connection", c.Name, "seconds", lp.Timeouts.FirstByteS)}
		}
		return reply{}, 0, &modelError{Kind: "refused", Msg: fillPairs(errs["refused"], "connection", c.Name, "url", c.BaseURL)}
	}
	defer resp.Body.Close()
	if f, ok := ctx.Value(answeringKey{}).(func()); ok {
		f()
	}
	if resp.StatusCode != 200 {
		detail := readErrorDetail(resp.Body)
		ra := retryAfter(resp.Header.Get("Retry-After"))
		switch {
		case resp.StatusCode == 401 || resp.StatusCode == 403:
			return reply{}, 0, &modelError{Kind: "auth", Status: resp.StatusCode, Msg: fillPairs(errs["auth"], "connection", c.Name, "status", resp.StatusCode, "key_hint", c.KeyHint)}
		case resp.StatusCode == 429:
			return reply{}, ra, &modelError{Kind: "rate_limited", Status: 429, Detail: detail, Conn: c.Name, Msg: fillPairs(errs["rate_limited"], "connection", c.Name, "tries", "1 try", "detail", " ("+detail+")")}
		case resp.StatusCode >= 500:
			return reply{}, ra, &modelError{Kind: "server", Status: resp.StatusCode, Detail: detail, Conn: c.Name, Msg: fillPairs(errs["server"], "connection", c.Name, "status", resp.StatusCode, "detail", " ("+detail+")", "tries", "1 try")}
		case isContextLength(detail):
			return reply{}, 0, r.contextLengthError(detail)
		case resp.StatusCode == 404 || strings.Contains(strings.ToLower(detail), "model"):
			return reply{}, 0, &modelError{Kind: "unknown_model", Status: resp.StatusCode, Msg: fillPairs(errs["unknown_model"], "connection", c.Name, "model", r.Model) + " (" + detail + ")"}
		default:
			return reply{}, 0, &modelError{Kind: "bad_request", Status: resp.StatusCode, Msg: fillPairs(errs["bad_request"], "connection", c.Name, "status", resp.StatusCode, "detail", detail)}
		}
	}
	watch.poke()
	a := newAssembler()
	sr := newSSEReader(resp.Body)
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		// A server that ignored stream: true and sent one JSON answer.
		return r.decodeWhole(resp.Body, onText, onReasoning)
	}
	done := false
	for {
		data, err := sr.next()
		if err != nil {
			if err == io.EOF && (done || a.r.Finish != "") {
				break
			}
			if watch.fired.Load() {
				return reply{}, 0, idleErr()
			}
			if ctx.Err() != nil {
				return reply{}, 0, context.Canceled
			}
			detail := "the connection closed before the answer ended"
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				detail = err.Error()
			}
			return reply{}, 0, &modelError{Kind: "cut", Msg: fillPairs(errs["cut"], "connection", c.Name, "detail", detail)}
		}
		watch.poke()
		if string(data) == "[DONE]" {
			done = true
			continue
		}
		var d streamDelta
		if err := json.Unmarshal(data, &d); err != nil {
			continue // a keep-alive or a server's own line; not ours to fail on
		}
		if d.Error != nil {
			return reply{}, 0, &modelError{Kind: "server", Msg: fillPairs(errs["server"], "connection", c.Name, "status", 200, "detail", d.Error.Message)}
		}
		a.add(&d, onText, onReasoning)
	}
	return a.finish(), 0, nil
}

// decodeWhole reads a non-streamed answer.
func (r *modelRef) decodeWhole(body io.Reader, onText, onReasoning func(string)) (reply, time.Duration, error) {
	var whole struct {
		Choices []struct {
			Message struct {
				Content          *string         `json:"content"`
				ReasoningContent *string         `json:"reasoning_content"`
				Reasoning        *string         `json:"reasoning"`
				ToolCalls        json.RawMessage `json:"tool_calls"`
			} `json:"message"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 64<<20)).Decode(&whole); err != nil {
		return reply{}, 0, &modelError{Kind: "cut", Msg: fillPairs(theSpec().Loop.ModelErrors["cut"], "connection", r.Conn.Name, "detail", err.Error())}
	}
	// Re-shape as one delta so the same assembler applies.
	var b strings.Builder
	b.WriteString(`{"choices":[`)
	for i, ch := range whole.Choices {
		if i > 0 {
			b.WriteByte(',')
		}
		m, _ := json.Marshal(map[string]any{"delta": map[string]any{
			"content": ch.Message.Content, "reasoning_content": ch.Message.ReasoningContent,
			"reasoning": ch.Message.Reasoning, "tool_calls": withIndexes(ch.Message.ToolCalls)},
			"finish_reason": ch.FinishReason})
		b.Write(m)
	}
	b.WriteString(`]`)
	if len(whole.Usage) > 0 {
		b.WriteString(`,"usage":`)
		b.Write(whole.Usage)
	}
	b.WriteString(`}`)
	var d streamDelta
	if err := json.Unmarshal([]byte(b.String()), &d); err != nil {
		return reply{}, 0, err
	}
	a := newAssembler()
	a.add(&d, onText, onReasoning)
	return a.finish(), 0, nil
}

// withIndexes numbers whole tool calls so the assembler keeps them apart.
func withIndexes(raw json.RawMessage) []map[string]any {
	var calls []map[string]any
	json.Unmarshal(raw, &calls)
	for i := range calls {
		calls[i]["index"] = i
	}
	return calls
}

func readErrorDetail(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct {
		Error any `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		switch v := e.Error.(type) {
		case string:
			return v
		case map[string]any:
			if m, ok := v["message"].(string); ok {
				return m
			}
		}
	}
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "<") {
		s = htmlWords(s) // a proxy's error page: its words, not its markup
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	if s == "" {
		s = "no detail"
	}
	return s
}

// isContextLength says whether a refusal is the request being longer than
// the model's window, as servers word it (OpenAI's code, llama.cpp's and
// vLLM's sentences).
func isContextLength(detail string) bool {
	d := strings.ToLower(detail)
	for _, w := range theSpec().Loop.ContextLengthMatch {
		if strings.Contains(d, w) {
			return true
		}
	}
	return false
}

var reTokenCounts = lazyRE(`(\d[\d,]*)\s*tokens`)

// contextLengthError says which limit was passed, by how much, and what to
// do: the numbers from the server's words, else the model's known window.
func (r *modelRef) contextLengthError(detail string) *modelError {
	limit, got := r.Meta.Context, 0
	if m := reTokenCounts.FindAllStringSubmatch(detail, -1); len(m) >= 2 {
		limit, _ = strconv.Atoi(strings.ReplaceAll(m[0][1], ",", ""))
		got, _ = strconv.Atoi(strings.ReplaceAll(m[1][1], ",", ""))
	}
	errs := theSpec().Loop.ModelErrors
	size := errs["context_length_unknown"]
	if got > 0 {
		size = fillPairs(errs["context_length_sizes"], "tokens", got)
	}
	return &modelError{Kind: "context_length", Status: 400, Detail: detail, Conn: r.Conn.Name,
		Msg: fillPairs(errs["context_length"], "model", r.String(), "limit", limit, "size", size)}
}

// htmlWords is the text of an HTML error page, tags dropped and spaces
// collapsed; the title alone when it has one.
func htmlWords(s string) string {
	low := strings.ToLower(s)
	if i := strings.Index(low, "<title>"); i >= 0 {
		if j := strings.Index(low[i:], "</title>"); j > 0 {
			return strings.Join(strings.Fields(s[i+7:i+j]), " ")
		}
	}
	var b strings.Builder
	in := false
	for _, c := range s {
		switch {
		case c == '<':
			in = true
			b.WriteByte(' ')
		case c == '>':
			in = false
		case !in:
			b.WriteRune(c)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// loginConnections are the logins as model connections (model.go adds
// them after config.yaml's and the environment's). A name another
// connection already has is left to that one.
func loginConnections(client *http.Client, have []*connection) []*connection {
	var out []*connection
	for _, l := range readLogins() {
		if findConn(have, l.Name) != nil {
			continue
		}
		out = append(out, &connection{Name: l.Name, BaseURL: strings.TrimRight(l.URL, "/") + "/v1", APIKey: l.Token,
			KeyHint: "the login " + l.Name + " (lembas login)", Source: "login", http: client})
	}
	return out
}
