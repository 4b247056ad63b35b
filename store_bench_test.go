package main

// Benchmarks of the lean store, start-up and idle (issue 9). Never timed
// assertions: the figures are reported, and the closing note quotes them.
//
//	go test -run '^$' -bench 'TurnWriteBytes' -benchtime 1x .
//	go test -run '^$' -bench 'SaveAppend' .   (Paired: 100 vs 4,000 in turn)
//	go test -run '^$' -bench 'IdleServe' -benchtime 1x .
//	go test -run '^$' -bench 'VersionPaired' -benchtime 200x .

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// uniqueCallReply is one bash call with its own id (callsReply reuses ids
// across replies, which a long scripted turn must not).
func uniqueCallReply(id, command string) fakeReply {
	args, _ := json.Marshal(map[string]any{"command": command})
	return fakeReply{body: sseData(
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{
			"tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function",
				"function": map[string]any{"name": "bash", "arguments": string(args)}}}}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}},
		map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 200, "completion_tokens": 20}},
	)}
}

// BenchmarkTurnWriteBytes runs the real binary through one 80-step turn
// against the fake model, each step a command printing ~20 KB, and
// reports the bytes the process sent to storage (the kernel's write_bytes,
// which wait4 returns as ru_oublock in 512-byte blocks — the same counter
// as /proc/PID/io) divided by the session's final size on disk.
func BenchmarkTurnWriteBytes(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("ru_oublock counts storage writes on Linux")
	}
	bin := lembasBin(b)
	f := newFakeModel(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for step := 1; step < 80; step++ {
			f.push(uniqueCallReply(fmt.Sprintf("call_%d", step), fmt.Sprintf("head -c 20000 /dev/zero | tr '\\0' x; echo step %d", step)))
		}
		f.push(textReply("Done after 80 steps."))
		proj, state := b.TempDir(), b.TempDir()
		cmd := exec.Command(bin, "--mode", "auto", "--max-steps", "100", "-p", "run the eighty steps")
		cmd.Dir = proj
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "SHELL=/bin/sh", "OPENAI_BASE_URL=" + f.url(),
			"LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + b.TempDir()}
		b.StartTimer()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		b.StopTimer()
		written := storageWrites(cmd.ProcessState)
		m, _ := filepath.Glob(filepath.Join(state, "lembas", "sessions", "*.json*"))
		if len(m) != 1 {
			b.Fatalf("sessions %v", m)
		}
		fi, _ := os.Stat(m[0])
		b.ReportMetric(float64(written), "write_bytes")
		b.ReportMetric(float64(fi.Size()), "state_bytes")
		b.ReportMetric(float64(written)/float64(fi.Size()), "written/state")
		b.StartTimer()
	}
}

// BenchmarkSaveAppend is one save that adds a 4 KB message to a session
// of n such messages. Each iteration then takes the message back off, so
// n stays put (the next save appends a cut, a message and the time: the
// same few records), and compaction is paid as it comes. The rewrite
// variant is what every save cost before the journal: the whole session,
// atomically.
func BenchmarkSaveAppend(b *testing.B) {
	for _, n := range []int{100, 4000} {
		for _, mode := range []string{"append", "rewrite"} {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				st := newStore(b.TempDir(), nil)
				defer st.close()
				s, err := st.create("/proj")
				if err != nil {
					b.Fatal(err)
				}
				body := strings.Repeat("x", 4096)
				for i := 0; i < n; i++ {
					s.Messages = append(s.Messages, message{Role: "tool", Content: body, Turn: 1, Time: time.Now()})
				}
				if err := st.save(s); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s.Messages = append(s.Messages[:n], message{Role: "tool", Content: body, Turn: 1, Time: time.Now()})
					if mode == "rewrite" {
						st.mu.Lock()
						err = st.rewrite(s)
						st.mu.Unlock()
					} else {
						err = st.save(s)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSaveAppendPaired is BenchmarkSaveAppend's append case at 100
// and at 4,000 messages, one save of each in turn, so both see the same
// disk and the same load from the rest of the machine; it reports each
// one's mean and their ratio.
func BenchmarkSaveAppendPaired(b *testing.B) {
	body := strings.Repeat("x", 4096)
	type one struct {
		n    int
		st   *store
		s    *session
		took time.Duration
	}
	var all []*one
	for _, n := range []int{100, 4000} {
		st := newStore(b.TempDir(), nil)
		defer st.close()
		s, err := st.create("/proj")
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			s.Messages = append(s.Messages, message{Role: "tool", Content: body, Turn: 1, Time: time.Now()})
		}
		if err := st.save(s); err != nil {
			b.Fatal(err)
		}
		all = append(all, &one{n: n, st: st, s: s})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, o := range all {
			t0 := time.Now()
			o.s.Messages = append(o.s.Messages[:o.n], message{Role: "tool", Content: body, Turn: 1, Time: time.Now()})
			if err := o.st.save(o.s); err != nil {
				b.Fatal(err)
			}
			o.took += time.Since(t0)
		}
	}
	for _, o := range all {
		b.ReportMetric(float64(o.took.Microseconds())/float64(b.N), fmt.Sprintf("us_at_%d", o.n))
	}
	b.ReportMetric(float64(all[1].took)/float64(all[0].took), "ratio")
}

// BenchmarkIdleServe starts `lembas serve --stdio` with nothing to do and
// counts its threads' context switches over 10 s (voluntary and not, from
// /proc/PID/task/*/status after the start-up settles): the wake-ups of an
// idle service. A Go hello world that sleeps is the yardstick.
func BenchmarkIdleServe(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("/proc")
	}
	bin := lembasBin(b)
	sleeper := buildGoProgram(b, `package main

import "time"

func main() { time.Sleep(time.Hour) }
`)
	proj := b.TempDir()
	open := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + strconv.Quote(proj) + `,"mcpServers":[]}}` + "\n"
	for i := 0; i < b.N; i++ {
		for _, c := range []struct {
			name, say string
			cmd       *exec.Cmd
		}{
			{"lembas_serve", "", exec.Command(bin, "serve", "--stdio")},
			{"lembas_serve_session", open, exec.Command(bin, "serve", "--stdio")},
			{"go_sleep", "", exec.Command(sleeper)},
		} {
			cmd := c.cmd
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "XDG_STATE_HOME=" + b.TempDir(), "XDG_CONFIG_HOME=" + b.TempDir(),
				"OPENAI_BASE_URL=http://127.0.0.1:9/v1", "LEMBAS_MODEL=mock"}
			stdin, _ := cmd.StdinPipe() // held open: an editor that says nothing more
			cmd.Stdout = io.Discard
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			io.WriteString(stdin, c.say)
			time.Sleep(2 * time.Second)
			before := ctxSwitches(cmd.Process.Pid)
			time.Sleep(10 * time.Second)
			after := ctxSwitches(cmd.Process.Pid)
			if before == 0 || after == 0 {
				b.Fatalf("%s is not running", c.name)
			}
			stdin.Close()
			cmd.Process.Kill()
			cmd.Wait()
			b.ReportMetric(float64(after-before), c.name+"_wakeups/10s")
		}
	}
}

// ctxSwitches sums every thread's context switches.
func ctxSwitches(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	n := 0
	for _, t := range tasks {
		data, _ := os.ReadFile(t)
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "voluntary_ctxt_switches:") || strings.HasPrefix(l, "nonvoluntary_ctxt_switches:") {
				v, _ := strconv.Atoi(strings.TrimSpace(l[strings.IndexByte(l, ':')+1:]))
				n += v
			}
		}
	}
	return n
}

// buildGoProgram builds a one-file Go program in a temp folder.
func buildGoProgram(b *testing.B, src string) string {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644)
	out := filepath.Join(dir, "prog")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", dir, err, o)
	}
	return out
}

// BenchmarkVersionPaired runs `lembas --version` (built with CGO_ENABLED=0,
// as the design card ships it; a cgo build spends ~2 ms more in the
// dynamic loader), a Go hello world, and a
// hello world that links the same standard packages lembas does (net/http,
// crypto/tls, encoding/json, os/exec: their inits and size come with any
// Go program that speaks HTTPS) in turn, so all see the same machine load,
// and reports each one's mean and the ratios.
func BenchmarkVersionPaired(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "lembas")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as released: static, no dynamic loader at start
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building lembas: %v\n%s", err, out)
	}
	hello := buildGoProgram(b, `package main

import "fmt"

func main() { fmt.Println("hello") }
`)
	helloHTTP := buildGoProgram(b, `package main

import (
	_ "crypto/tls"
	_ "encoding/json"
	"fmt"
	_ "net/http"
	_ "os/exec"
)

func main() { fmt.Println("hello") }
`)
	progs := [][]string{{bin, "--version"}, {hello}, {helloHTTP}}
	took := make([]time.Duration, len(progs))
	for i := 0; i < b.N; i++ {
		for k, p := range progs {
			t0 := time.Now()
			if err := exec.Command(p[0], p[1:]...).Run(); err != nil {
				b.Fatal(err)
			}
			took[k] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "lembas_us")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "hello_us")
	b.ReportMetric(float64(took[2].Microseconds())/float64(b.N), "hello_http_us")
	b.ReportMetric(float64(took[0])/float64(took[1]), "ratio_hello")
	b.ReportMetric(float64(took[0])/float64(took[2]), "ratio_hello_http")
}

// BenchmarkLatest is what `lembas -c` pays to find the session to go on
// with, among 30 stored sessions of 100 messages of 4 KB: latest (which
// peeks at each journal's ends and replays one) against reading every
// session whole (what latest did before, through list).
func BenchmarkLatest(b *testing.B) {
	dir := b.TempDir()
	st := newStore(dir, nil)
	body := strings.Repeat("x", 4096)
	for i := 0; i < 30; i++ {
		s, err := st.create(fmt.Sprint("/p", i%3))
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 100; j++ {
			s.Messages = append(s.Messages, message{Role: "tool", Content: body, Time: time.Now()})
		}
		st.save(s)
	}
	st.close()
	b.Run("peek", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := newStore(dir, nil).latest("/p1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read_all", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if all, err := newStore(dir, nil).list(); err != nil || len(all) != 30 {
				b.Fatal(err)
			}
		}
	})
}
