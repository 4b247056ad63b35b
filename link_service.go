package main

// `lembas service`: the link in the foreground (logs on stderr, one line
// an event worth knowing), and `service install|uninstall|status` — a
// systemd user unit on Linux, a launchd agent on macOS, and the state the
// running service keeps in <state>/link/status.json for status to read.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

const serviceUsage = `usage: lembas service [--login NAME]
       lembas service install [--login NAME] | uninstall | status | scheduled on|off

service          the device link in the foreground, logging to stderr
service install  a systemd user unit (Linux) or a launchd agent (macOS) that runs it
service status   linked or not, since when, to which instance, with which limits
service scheduled on|off  accept scheduled work from the instance, or refuse it (remote.scheduled)`

func cmdService(args []string, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if sub == "scheduled" { // link_scheduled.go
		return cmdServiceScheduled(args, func(s string) { fmt.Fprintln(stdout, s) })
	}
	fs := flag.NewFlagSet("service", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	loginName := fs.String("login", "", "")
	if err := fs.Parse(args); err == flag.ErrHelp {
		fmt.Fprintln(stdout, serviceUsage)
		return nil
	} else if err != nil || fs.NArg() > 0 {
		return usageError{"lembas service: unexpected arguments\n" + serviceUsage}
	}
	switch sub {
	case "":
		l, err := findLogin(*loginName)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
		defer stop()
		logf := func(s string) {
			fmt.Fprintf(stderr, "%s lembas: %s\n", time.Now().UTC().Format(time.RFC3339), redactToken(s, l.Token))
		}
		pruneTurnFiles(time.Now())
		sweepSchedMarks() // link_scheduled.go
		svc := newLinkService(l, logf)
		if err := svc.run(ctx); err != nil {
			return exitError{code: exitFailure, msg: err.Error()}
		}
		return nil
	case "install":
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		path, text, start := serviceUnit(runtime.GOOS, exe, *loginName)
		if path == "" {
			return errorf("lembas service install knows systemd (Linux) and launchd (macOS); on %s, run lembas service from the system's own service manager", runtime.GOOS)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeFileAtomic(path, []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, linkText("service_installed", "path", path, "start", start))
		if runtime.GOOS == "linux" {
			fmt.Fprintln(stdout, linkText("linger", "user", os.Getenv("USER")))
		}
		return nil
	case "uninstall":
		path, _, _ := serviceUnit(runtime.GOOS, "", "")
		if path == "" {
			return errorf("no service file is kept on %s", runtime.GOOS)
		}
		if err := os.Remove(path); err != nil {
			return errorf("removing %s: %v", path, err)
		}
		fmt.Fprintln(stdout, linkText("service_removed", "path", path))
		return nil
	case "status":
		fmt.Fprintln(stdout, serviceStatusLine())
		fmt.Fprintln(stdout, scheduledStatusLine()) // link_scheduled.go
		return nil
	}
	return usageError{fmt.Sprintf("unknown service subcommand %q\n%s", sub, serviceUsage)}
}

// serviceUnit is where the service file goes on goos, its text, and the
// command that starts it.
func serviceUnit(goos, exe, login string) (path, text, start string) {
	home, _ := os.UserHomeDir()
	args := []string{exe, "service"}
	if login != "" {
		args = append(args, "--login", login)
	}
	switch goos {
	case "linux":
		path = filepath.Join(home, ".config", "systemd", "user", "lembas.service")
		text = "[Unit]\nDescription=lembas device link\nAfter=network-online.target\nWants=network-online.target\n\n" +
			"[Service]\nExecStart=" + strings.Join(quoteSystemd(args), " ") + "\nRestart=on-failure\nRestartSec=5\n\n" +
			"[Install]\nWantedBy=default.target\n"
		start = "systemctl --user daemon-reload && systemctl --user enable --now lembas.service"
	case "darwin":
		path = filepath.Join(home, "Library", "LaunchAgents", "dev.lembas.service.plist")
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n")
		b.WriteString("<plist version=\"1.0\">\n<dict>\n\t<key>Label</key>\n\t<string>dev.lembas.service</string>\n\t<key>ProgramArguments</key>\n\t<array>\n")
		for _, a := range args {
			b.WriteString("\t\t<string>" + xmlEscape(a) + "</string>\n")
		}
		b.WriteString("\t</array>\n\t<key>RunAtLoad</key>\n\t<true/>\n\t<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
		b.WriteString("\t<key>StandardErrorPath</key>\n\t<string>" + xmlEscape(filepath.Join(home, "Library", "Logs", "lembas.log")) + "</string>\n</dict>\n</plist>\n")
		text = b.String()
		start = "launchctl load -w " + path
	}
	return path, text, start
}

func quoteSystemd(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t\"'\\") {
			a = "\"" + strings.NewReplacer("\\", "\\\\", "\"", "\\\"").Replace(a) + "\""
		}
		out[i] = a
	}
	return out
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&quot;").Replace(s)
}

// serviceStatus is <state>/link/status.json.
type serviceStatus struct {
	Login    string       `json:"login"`
	Instance string       `json:"instance,omitempty"`
	Since    time.Time    `json:"since,omitempty"`
	Limits   remoteLimits `json:"limits"`
	PID      int          `json:"pid"`
}

// writeServiceStatus records whether the service is linked (instance not
// empty) for service status. The error is the write's: the status only
// informs `lembas service status`, so the caller says it and goes on.
func writeServiceStatus(login, instance string, since time.Time, lim remoteLimits) error {
	if err := os.MkdirAll(linkStateDir(), 0o700); err != nil {
		return errorf("writing the service's status: %w", err)
	}
	b, _ := json.Marshal(serviceStatus{Login: login, Instance: instance, Since: since, Limits: lim, PID: os.Getpid()}) // it always encodes
	if err := writeFileAtomic(filepath.Join(linkStateDir(), "status.json"), b, 0o600); err != nil {
		return errorf("writing the service's status (lembas service status will be out of date): %w", err)
	}
	return nil
}

// sayStatusErr logs a failed status write once per fault: the link goes
// up and down many times on a full disk, and one line says it.
func (svc *linkService) sayStatusErr(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	svc.mu.Lock()
	said := svc.statusErr == msg
	svc.statusErr = msg
	svc.mu.Unlock()
	if !said && msg != "" {
		svc.log(msg)
	}
}

func serviceStatusLine() string {
	data, err := os.ReadFile(filepath.Join(linkStateDir(), "status.json"))
	var st serviceStatus
	if err != nil || json.Unmarshal(data, &st) != nil {
		return linkText("status_unlinked", "why", ": the service has not run here")
	}
	if st.Instance == "" || !processAlive(st.PID) {
		return linkText("status_unlinked", "why", "")
	}
	return linkText("status_linked", "instance", st.Instance, "since", st.Since.Format(time.RFC3339),
		"roots", fmt.Sprint(st.Limits.Roots), "max_mode", st.Limits.MaxMode)
}
