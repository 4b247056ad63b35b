package main

// What `lembas -p` costs before its first request, measured from outside:
// the built binary is exec'd against a loopback fake model and the clock
// stops when the first chat request arrives — everything the process did
// before it (runtime start, config, store, tools, permissions, the system
// prompt, the model lookup) is inside the figure, nothing after it is.
// A Go program whose whole work is that one request is timed the same way,
// in turn, so both see the same machine load:
//
//	go test -run '^$' -bench 'PStartup' -benchtime 100x .
//
// LEMBAS_BENCH_BASE names another lembas binary (say, one built from an
// earlier commit) timed the same way in the same rounds, for a before and
// after under the same load. LEMBAS_BENCH_MODELS_DELAY_MS holds each
// answer to GET /models back that long, as a server across a network
// would (lembas asks it which models it serves; the Go program does not).

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// firstRequestModel is a fakeModel whose server also notes when each chat
// request arrives, so a benchmark can stop its clock there.
type firstRequestModel struct {
	*fakeModel
	arrived chan time.Time
}

func newFirstRequestModel(b *testing.B, modelsDelay time.Duration) *firstRequestModel {
	f := &firstRequestModel{fakeModel: &fakeModel{t: b, models: []string{"mock"}}, arrived: make(chan time.Time, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/models") {
			time.Sleep(modelsDelay)
		}
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions") {
			f.arrived <- time.Now()
		}
		f.serve(w, r)
	}))
	b.Cleanup(f.srv.Close)
	return f
}

// buildLembasStatic builds the binary as released (CGO_ENABLED=0: static,
// no dynamic loader at start), so the figure is the one a person sees.
func buildLembasStatic(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "lembas")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building lembas: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkPStartup reports the mean time from exec to the first chat
// request of `lembas -p` (a new session in an empty project, the model
// named by LEMBAS_MODEL and served at OPENAI_BASE_URL), of a Go program
// that only sends one such request, and their ratio.
func BenchmarkPStartup(b *testing.B) {
	bin := buildLembasStatic(b)
	client := buildGoProgram(b, `package main

import (
	"io"
	"net/http"
	"os"
	"strings"
)

func main() {
	body := `+"`"+`{"model":"mock","stream":true,"messages":[{"role":"user","content":"say hi"}]}`+"`"+`
	resp, err := http.Post(os.Getenv("OPENAI_BASE_URL")+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		os.Exit(1)
	}
	io.Copy(io.Discard, resp.Body)
}
`)
	delay, _ := strconv.Atoi(os.Getenv("LEMBAS_BENCH_MODELS_DELAY_MS"))
	f := newFirstRequestModel(b, time.Duration(delay)*time.Millisecond)
	took := map[string]time.Duration{}
	names := []string{"lembas_p", "go_client"}
	base := os.Getenv("LEMBAS_BENCH_BASE")
	if base != "" {
		names = append(names, "base_p")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, name := range names {
			b.StopTimer()
			f.push(textReply("hi"))
			var cmd *exec.Cmd
			switch name {
			case "lembas_p":
				cmd = exec.Command(bin, "-p", "say hi")
			case "base_p":
				cmd = exec.Command(base, "-p", "say hi")
			default:
				cmd = exec.Command(client)
			}
			cmd.Dir = b.TempDir()
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "SHELL=/bin/sh",
				"OPENAI_BASE_URL=" + f.url(), "LEMBAS_MODEL=mock",
				"XDG_STATE_HOME=" + b.TempDir(), "XDG_CONFIG_HOME=" + b.TempDir()}
			if name == "lembas_p" {
				b.StartTimer() // ns/op is lembas's alone; the client's is a metric
			}
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case at := <-f.arrived:
				b.StopTimer()
				took[name] += at.Sub(t0)
			case err := <-done:
				b.Fatalf("%s ended before its first request: %v", name, err)
			}
			if err := <-done; err != nil {
				b.Fatalf("%s: %v", name, err)
			}
		}
	}
	b.ReportMetric(float64(took["lembas_p"].Microseconds())/float64(b.N), "lembas_p_us")
	b.ReportMetric(float64(took["go_client"].Microseconds())/float64(b.N), "go_client_us")
	b.ReportMetric(float64(took["lembas_p"])/float64(took["go_client"]), "ratio")
	if base != "" {
		b.ReportMetric(float64(took["base_p"].Microseconds())/float64(b.N), "base_p_us")
		b.ReportMetric(float64(took["lembas_p"])/float64(took["base_p"]), "ratio_base")
	}
}

// BenchmarkLoadSpec parses the whole main spec, as the first theSpec of a
// process does — the largest piece of -p's start-up CPU. encoding/json's
// type caches are warm after the first round, so the figure is below what
// a fresh process pays.
func BenchmarkLoadSpec(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := loadSpec(harnessFS); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadSpecFast is BenchmarkLoadSpec without the tests' check
// that decodes every harness file a second time with encoding/json
// (harnessDecodeCheck): what the binary pays.
func BenchmarkLoadSpecFast(b *testing.B) {
	saved := harnessDecodeCheck
	harnessDecodeCheck = nil
	defer func() { harnessDecodeCheck = saved }()
	for i := 0; i < b.N; i++ {
		if _, err := loadSpec(harnessFS); err != nil {
			b.Fatal(err)
		}
	}
}
