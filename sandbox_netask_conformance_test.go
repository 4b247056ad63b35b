package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// The network area (sandbox_netask.go): what the gate does with one
// connection — a command's through the proxy, or webfetch's — for a
// config, the hosts the project allowed before, and the person's answer
// (once, project, deny, headless: -p's refusal without its log (a subagent's, a test's), p: -p's own approver, none: no command running, wait: the
// card is taken down); and what `sandbox check` says where the probe finds
// no sandbox or config turns it off. No connection is made: the gate is
// asked directly.
func init() {
	conformanceRunners["network"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Kind      string   `json:"kind"` // gate, check
			Config    string   `json:"config"`
			Project   []string `json:"project"`      // hosts the project allowed before
			File      string   `json:"project_file"` // network.json as it is on disk (instead of project)
			Who       string   `json:"who"`          // command (default), webfetch
			Host      string   `json:"host"`
			Port      string   `json:"port"`
			Answer    string   `json:"answer"`
			Again     bool     `json:"again"`      // a second connection of the same command after the answer
			Before    []string `json:"before"`     // hosts the same command was refused before (each asked, denied)
			Probe     string   `json:"probe"`      // check: none (no sandbox here), or "" (landlock as given)
			Peer      string   `json:"peer"`       // gate: "" (no world: the host's loopback), named (the forwarder named this command), unknown (it could not tell)
			Others    int      `json:"others"`     // gate: commands started after this one, running beside it
			First     string   `json:"first"`      // gate: named_once — the command itself connected first, and was allowed once
			AgainAs   string   `json:"again_peer"` // gate: again as another peer (named)
			Mode      string   `json:"mode"`
			Addresses []string `json:"addresses"` // local: addresses to judge
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		c, err := parseConfig([]byte(in.Config), "config.yaml")
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "lembas-net-conf-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		sb := newSandbox(c.Sandbox, "/p")
		sb.net.file = filepath.Join(dir, "network.json")
		if len(in.Project) > 0 {
			data, _ := json.Marshal(map[string][]string{"/p": in.Project})
			os.WriteFile(sb.net.file, data, 0o600)
		}
		if in.File != "" {
			os.WriteFile(sb.net.file, []byte(in.File), 0o600)
		}
		switch in.Kind {
		case "local": // which addresses privateIP takes as local (web.go): the proxy and webfetch refuse them for a name
			la := theSandboxSpec().LocalAddresses
			for _, p := range la.Prefixes {
				if _, err := netip.ParsePrefix(p); err != nil {
					return nil, fmt.Errorf("sandbox.json local_addresses: %v", err)
				}
			}
			for p := range la.EmbedV4 {
				if _, err := netip.ParsePrefix(p); err != nil {
					return nil, fmt.Errorf("sandbox.json local_addresses embed_v4: %v", err)
				}
			}
			local := []string{}
			for _, h := range in.Addresses {
				if privateIP(netip.MustParseAddr(h)) {
					local = append(local, h)
				}
			}
			return map[string]any{"local": local}, nil
		case "check":
			switch in.Probe {
			case "none":
				sb.probeHook = func() sandboxProbe { return sandboxProbe{Why: "no sandbox on this test machine"} }
			}
			mode := in.Mode
			if mode == "" {
				mode = "auto"
			}
			var heads []string
			out := map[string]any{"why": sandboxWhy(sb)}
			for i, l := range strings.Split(strings.TrimRight(sb.report(mode), "\n"), "\n") {
				head, rest, _ := strings.Cut(strings.TrimSpace(l), ":")
				if i == 0 || head == "network" {
					out[head] = strings.TrimSpace(rest)
				}
				heads = append(heads, head) // what the environment line drops depends on the machine: only its head
			}
			out["lines"] = heads
			return out, nil
		case "gate":
		default:
			return nil, fmt.Errorf("unknown kind %q", in.Kind)
		}
		var ask approver
		switch in.Answer {
		case "once", "project", "deny":
			sa := &scriptedApprover{}
			for range in.Before {
				sa.answers = append(sa.answers, approvalAnswer{Choice: "deny"})
			}
			ask = &scriptedApprover{answers: append(sa.answers, approvalAnswer{Choice: in.Answer})}
		case "wait":
			ask = blockingApprover{}
		case "headless", "none":
			ask = headlessApprover{}
		case "p": // lembas -p's own approver: it keeps what it refused for the closing word
			ask = headlessApprover{log: &refusalLog{}}
		}
		var said []string
		r := newNetRun(context.Background(), "curl https://"+in.Host, ask, func(s string) { said = append(said, s) })
		if in.Answer == "wait" {
			r.cancel() // the card is taken down (the command ended)
		}
		peer := netPeer{}
		switch in.Peer {
		case "named":
			peer = netPeer{world: true, init: 100, id: 1, known: true}
		case "unknown":
			peer = netPeer{world: true, init: 100}
		}
		judge := func() netVerdict {
			if in.Who == "webfetch" {
				return sb.permitWeb(r, in.Host, in.Port)
			}
			return sb.permitCommandFrom(in.Host, in.Port, peer)
		}
		if in.Who != "webfetch" && in.Answer != "none" {
			sb.netHold(r) // the command is running
			defer sb.netRelease(r)
			r.initPid, r.wid = 100, 1 // its place in the world
			for i := 0; i < in.Others; i++ {
				o := newNetRun(context.Background(), fmt.Sprintf("sleep 100 # other %d", i+1), ask, nil)
				o.initPid, o.wid = 100, uint64(i+2)
				sb.netHold(o)
				defer sb.netRelease(o)
			}
		}
		if in.First == "named_once" {
			sa := ask.(*scriptedApprover)
			sa.answers = append([]approvalAnswer{{Choice: "once"}}, sa.answers...)
			if v := sb.permitCommandFrom(in.Host, in.Port, netPeer{world: true, init: 100, id: 1, known: true}); !v.ok {
				return nil, fmt.Errorf("the command's own first connection was refused: %s", v.body)
			}
			in.Before = nil
			sa.asked = nil // the card the case looks at is the next one
		}
		host := in.Host
		for _, h := range in.Before {
			in.Host = h
			judge()
		}
		in.Host = host
		v := judge()
		out := map[string]any{"allowed": v.ok}
		if v.body != "" {
			out["body"] = strings.TrimSpace(v.body)
		}
		if sa, ok := ask.(*scriptedApprover); ok && len(sa.asked) > len(in.Before) {
			q := sa.asked[len(in.Before)]
			out["card"] = map[string]any{"tool": q.Tool, "input": q.Input, "options": q.Options, "rule": q.Rule}
			if in.Peer != "" || in.Others > 0 { // the command the card names
				_, cmd, _ := strings.Cut(q.Reason, "sandbox.network.allow: ")
				cmd, _, _ = strings.Cut(cmd, ". Once:")
				out["command"] = cmd
			}
		}
		if len(said) > 0 {
			for i := range said {
				said[i] = strings.ReplaceAll(said[i], dir, "$DIR")
			}
			out["stderr"] = said
		}
		if in.Again {
			if in.AgainAs == "named" {
				peer = netPeer{world: true, init: 100, id: 1, known: true}
			}
			out["again"] = judge().ok
		}
		if h, ok := ask.(headlessApprover); ok && h.log != nil {
			out["not_done"] = refusedText(h.log, "auto") // what -p ends with (exit 5), "" for nothing refused
		}
		if data, err := os.ReadFile(sb.net.file); err == nil && in.File != "" {
			out["file"] = string(data) // as it was left
		} else if err == nil && in.Answer == "project" {
			var m map[string][]string
			json.Unmarshal(data, &m)
			out["kept"] = m["/p"]
		}
		return out, nil
	}
}
