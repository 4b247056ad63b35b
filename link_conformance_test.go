package main

// The link's conformance areas: link_hostile (the JSON-RPC layer's answers
// to hostile input, through the real stdio agent), link_turns (the turn
// record's steps, on real files), link_limits (the remote: limits judging
// real folders).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

func init() {
	conformanceRunners["link_hostile"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Frame        string `json:"frame"`
			MethodRepeat int    `json:"method_repeat"`
			BatchRepeat  int    `json:"batch_repeat"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		frame := []byte(strings.ReplaceAll(in.Frame, "<FF>", "\xff"))
		if in.BatchRepeat > 0 {
			frame = []byte("[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"x"},`, in.BatchRepeat), ",") + "]")
		}
		if in.MethodRepeat > 0 {
			frame = []byte(`{"jsonrpc":"2.0","id":7,"method":"` + strings.Repeat("m", in.MethodRepeat) + `"}`)
		}
		var sent [][]byte
		a := newACPAgent(context.Background(), nil, &captureWriter{f: func(b []byte) { sent = append(sent, b) }}, func(string) {})
		defer a.cancel()
		a.conn.handle(frame)
		if len(sent) != 1 {
			return nil, fmt.Errorf("%d frames sent back", len(sent))
		}
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(sent[0], &m); err != nil {
			return nil, err
		}
		out := map[string]any{"id": m.ID, "valid_utf8": utf8.Valid(sent[0]), "code": 0, "message_short": true}
		if m.Error != nil {
			out["code"], out["message_short"] = m.Error.Code, len(m.Error.Message) <= 300
		}
		return out, nil
	}
	conformanceRunners["link_turns"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Steps []string `json:"steps"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "turns")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		old, had := os.LookupEnv("XDG_STATE_HOME")
		os.Setenv("XDG_STATE_HOME", dir)
		defer func() {
			if had {
				os.Setenv("XDG_STATE_HOME", old)
			} else {
				os.Unsetenv("XDG_STATE_HOME")
			}
		}()
		b := newTurnBook()
		var wait <-chan json.RawMessage
		var out []string
		for _, st := range in.Steps {
			f := strings.Fields(st)
			switch f[0] {
			case "claim":
				fresh, ans, w := b.claim("ses_x", f[1])
				switch {
				case fresh:
					out = append(out, "fresh")
				case ans != nil && strings.Contains(string(ans), `"interrupted":true`):
					out = append(out, "interrupted")
				case ans != nil:
					out = append(out, "done "+string(ans))
				default:
					wait = w
					out = append(out, "wait")
				}
			case "finish":
				b.finish("ses_x", f[1], json.RawMessage(`"`+f[2]+`"`))
				out = append(out, "finished")
			case "waiter":
				select {
				case a := <-wait:
					out = append(out, "got "+string(a))
				default:
					out = append(out, "nothing")
				}
			case "restart":
				b = newTurnBook()
				out = append(out, "restarted")
			case "fill":
				var n int
				fmt.Sscan(f[1], &n)
				for i := 0; i < n; i++ {
					id := fmt.Sprintf("fill-%d", i)
					b.claim("ses_x", id)
					b.finish("ses_x", id, json.RawMessage(`"F"`))
				}
				out = append(out, "filled")
			}
		}
		for i, s := range out { // answers are JSON strings: show them bare
			out[i] = strings.ReplaceAll(s, `"`, "")
		}
		return out, nil
	}
	conformanceRunners["link_limits"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Config string `json:"config"`
			Dir    string `json:"dir"`
			Mode   string `json:"mode"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		root, err := os.MkdirTemp("", "limits")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
		root, _ = filepath.EvalSymlinks(root)
		for _, d := range []string{"roots/a", "roots/b", "outside", "config/lembas", "state"} {
			os.MkdirAll(filepath.Join(root, d), 0o755)
		}
		os.Symlink(filepath.Join(root, "outside"), filepath.Join(root, "roots", "link"))
		restore := linkSetEnvs(map[string]string{"XDG_CONFIG_HOME": filepath.Join(root, "config"), "XDG_STATE_HOME": filepath.Join(root, "state")})
		defer restore()
		setTrust(filepath.Join(root, "roots", "a"), true)
		os.WriteFile(configPath(), []byte(strings.ReplaceAll(in.Config, "{root}", root)), 0o600)
		lim, err := readRemoteLimits()
		if err != nil {
			return nil, err
		}
		if in.Mode != "" {
			return map[string]string{"mode": lim.lowerMode(in.Mode)}, nil
		}
		_, rerr := lim.judgeDir(filepath.Join(root, in.Dir))
		if rerr == nil {
			return map[string]any{"accepted": true}, nil
		}
		reason := "?"
		for k, v := range theLinkSpec().Errors {
			if k != "method_max" && strings.HasPrefix(rerr.Message, strings.SplitN(v, "{{", 2)[0]) && !strings.HasPrefix(v, "{{") {
				reason = k
			}
		}
		for _, k := range []string{"outside", "untrusted"} { // texts that begin with the folder's name
			tail := strings.SplitN(theLinkSpec().Errors[k], "}}", 2)[1]
			if strings.Contains(rerr.Message, strings.SplitN(tail, "{{", 2)[0]) {
				reason = k
			}
		}
		return map[string]any{"accepted": false, "reason": reason}, nil
	}
}

// linkSetEnvs sets variables for one conformance case and gives back a func
// that puts them back.
func linkSetEnvs(vars map[string]string) func() {
	type saved struct {
		v  string
		ok bool
	}
	old := map[string]saved{}
	for k, v := range vars {
		o, ok := os.LookupEnv(k)
		old[k] = saved{o, ok}
		os.Setenv(k, v)
	}
	return func() {
		for k, s := range old {
			if s.ok {
				os.Setenv(k, s.v)
			} else {
				os.Unsetenv(k)
			}
		}
	}
}
