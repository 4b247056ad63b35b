package main

// Logins to LLeMbas instances: `lembas login URL` reads the instance's
// discovery, gets a device token by the OAuth 2.0 device authorization
// grant (RFC 8628) or a pasted one, and keeps it in <state>/logins/<name>.json
// (mode 0600, in a folder of mode 0700; never printed, logged, or put in
// config.yaml), with the scopes the token endpoint said it granted (the
// library scope brings the instance's /mcp in: mcp_config.go). Each login
// is a model connection of its own name, its models the instance's chat
// models under their served ids. Also here:
// logins, logout, trust and untrust (the REPL's trust, for a headless
// machine).
//
// A front end (floor 5): the logins it keeps are config_logins.go's (floor
// 2), which the model client and MCP read.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// findLogin is the login named, or the only one when name is empty.
func findLogin(name string) (*loginRecord, error) {
	all := readLogins()
	if name == "" {
		switch len(all) {
		case 0:
			return nil, errorNew(linkText("no_logins"))
		case 1:
			return all[0], nil
		}
		var names []string
		for _, l := range all {
			names = append(names, l.Name)
		}
		return nil, usageError{fmt.Sprintf("there are %d logins (%s); name one with --login NAME", len(all), strings.Join(names, ", "))}
	}
	for _, l := range all {
		if l.Name == name {
			return l, nil
		}
	}
	return nil, usageError{fmt.Sprintf("no login named %s; lembas logins lists them", name)}
}

// instanceModel is one /v1/models entry.
type instanceModel struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

// instanceModels lists the instance's models with the login's token.
func (l *loginRecord) instanceModels(ctx context.Context) ([]instanceModel, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(l.URL, "/")+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+l.Token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, errorNew(redactToken(err.Error(), l.Token))
	}
	defer resp.Body.Close()
	if resp.StatusCode == 401 || resp.StatusCode == 403 {
		return nil, errorf("the instance refused the token (%s); run lembas login %s again", resp.Status, l.URL)
	}
	if resp.StatusCode != 200 {
		return nil, errorf("listing the instance's models: %s", resp.Status)
	}
	var body struct {
		Data []instanceModel `json:"data"`
	}
	if err := json.NewDecoder(limitBody(resp.Body)).Decode(&body); err != nil {
		return nil, errorf("listing the instance's models: %v", err)
	}
	return body.Data, nil
}

// servedModels are the instance's chat models (kind chat, or no kind),
// under their served ids.
func (l *loginRecord) servedModels(ctx context.Context) ([]string, error) {
	ms, err := l.instanceModels(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if m.Kind == "" || m.Kind == "chat" {
			out = append(out, m.ID)
		}
	}
	return out, nil
}

func limitBody(r io.Reader) io.Reader { return io.LimitReader(r, 4<<20) }

// deviceFlow runs RFC 8628: ask for a code, show it, poll for the token.
// It gives the token and the scopes the token endpoint said it granted.
// sleep waits between polls (sleepCtx; a test records the intervals).
func deviceFlow(ctx context.Context, d *discovery, client *http.Client, out io.Writer, sleep func(context.Context, time.Duration) error) (string, []string, error) {
	sp := theLinkSpec().DeviceFlow
	authURL, err := d.resolveRef(d.DeviceAuth)
	if err != nil {
		return "", nil, err
	}
	tokenURL, err := d.resolveRef(d.TokenURL)
	if err != nil {
		return "", nil, err
	}
	resp, err := client.PostForm(authURL, url.Values{"client_id": {d.ClientID}, "scope": {strings.Join(sp.Scopes, " ")}})
	if err != nil {
		return "", nil, errorf("asking %s for a device code: %v", authURL, err)
	}
	var code struct {
		DeviceCode              string `json:"device_code"`
		UserCode                string `json:"user_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		ExpiresIn               int    `json:"expires_in"`
		Interval                int    `json:"interval"`
	}
	err = json.NewDecoder(limitBody(resp.Body)).Decode(&code)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || code.DeviceCode == "" {
		return "", nil, errorf("the instance gave no device code (%s); try again, or paste a token with --token-stdin", resp.Status)
	}
	fmt.Fprintln(out, linkText("device_code", "uri", oneLine(code.VerificationURI, 300), "code", oneLine(code.UserCode, 64)))
	if code.VerificationURIComplete != "" {
		fmt.Fprintln(out, linkText("device_code_complete", "uri", oneLine(code.VerificationURIComplete, 300)))
	}
	fmt.Fprintln(out, linkText("waiting"))
	interval := code.Interval
	if interval <= 0 {
		interval = sp.DefaultIntervalS
	}
	for {
		if err := sleep(ctx, time.Duration(interval)*time.Second); err != nil {
			return "", nil, err
		}
		resp, err := client.PostForm(tokenURL, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
			"device_code": {code.DeviceCode}, "client_id": {d.ClientID}})
		if err != nil {
			return "", nil, errorf("polling %s: %v", tokenURL, err)
		}
		var tok struct {
			AccessToken string `json:"access_token"`
			Scope       string `json:"scope"`
			Error       string `json:"error"`
		}
		json.NewDecoder(limitBody(resp.Body)).Decode(&tok)
		resp.Body.Close()
		switch {
		case resp.StatusCode == 200 && tok.AccessToken != "":
			return tok.AccessToken, strings.Fields(tok.Scope), nil
		case tok.Error == "authorization_pending":
		case tok.Error == "slow_down":
			interval += sp.SlowDownS
			fmt.Fprintln(out, linkText("slow_down", "interval", interval))
		case tok.Error == "access_denied":
			return "", nil, errorNew(linkText("denied"))
		case tok.Error == "expired_token":
			return "", nil, errorNew(linkText("expired"))
		default:
			return "", nil, errorf("the instance answered the token poll with %s %s; run lembas login again", resp.Status, oneLine(tok.Error, 80))
		}
	}
}

const loginUsage = `usage: lembas login URL [--name NAME] [--token-stdin]

Logs this device in to a LLeMbas instance: with the instance's device flow
(a code to enter in the web UI), or a pasted token (--token-stdin reads it
from standard input, with no prompt). NAME (default: the instance's host)
names the login and its model connection.`

// cmdLogin is `lembas login`.
func cmdLogin(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return login(args, stdin, stdout, stderr, sleepCtx)
}

// login is cmdLogin with the device flow's wait between polls given.
func login(args []string, stdin io.Reader, stdout, stderr io.Writer, sleep func(context.Context, time.Duration) error) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "")
	tokenStdin := fs.Bool("token-stdin", false, "")
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err == flag.ErrHelp {
			fmt.Fprintln(stdout, loginUsage)
			return nil
		} else if err != nil {
			return usageError{err.Error() + "\n" + loginUsage}
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	if len(pos) != 1 {
		return usageError{"lembas login takes one instance address\n" + loginUsage}
	}
	ctx := context.Background()
	client := &http.Client{Timeout: time.Duration(theLinkSpec().DeviceFlow.HTTPTimeoutS) * time.Second}
	d, err := readDiscovery(ctx, client, pos[0])
	if err != nil {
		return err
	}
	u, _ := url.Parse(d.resolvedURL)
	if *name == "" {
		*name = strings.ReplaceAll(u.Hostname(), ":", "-")
	}
	if !validLoginName(*name) {
		return usageError{fmt.Sprintf("--name %q: use letters, digits, '-', '_' and '.'", *name)}
	}
	var token string
	var scopes []string
	switch {
	case *tokenStdin:
		token, err = readTokenLine(stdin)
	case d.DeviceAuth != "" && d.TokenURL != "":
		token, scopes, err = deviceFlow(ctx, d, client, stdout, sleep)
	default:
		fmt.Fprint(stdout, linkText("paste_token", "url", d.resolvedURL))
		token, err = readTokenLine(stdin)
	}
	if err != nil {
		return err
	}
	l := &loginRecord{Name: *name, URL: d.resolvedURL, Instance: d.Name, Token: token, Scopes: scopes, Created: time.Now().UTC()}
	l.About = l.instanceAbout(ctx) // login_api.go; nil when the instance has none
	ms, err := l.instanceModels(ctx)
	if err != nil {
		return err
	}
	if err := saveLogin(l); err != nil {
		return err
	}
	var chat []string
	embedding := ""
	for _, m := range ms {
		switch m.Kind {
		case "", "chat":
			chat = append(chat, m.ID)
		case "embedding":
			if embedding == "" {
				embedding = m.ID
			}
		}
	}
	if embedding != "" {
		if cfg, err := loadConfig(); err == nil {
			top, _ := cfg.Raw.(map[string]any)
			if _, set := top["embedding"]; !set {
				if err := configSet(configPath(), "embedding", l.Name+"/"+embedding); err != nil {
					fmt.Fprintln(stderr, "lembas: "+err.Error())
				}
			}
		}
	}
	fmt.Fprintln(stdout, linkText("logged_in", "instance", d.Name, "name", l.Name, "models", len(chat), "list", strings.Join(chat, ", ")))
	return nil
}

// readTokenLine reads one token from r: its first line, trimmed.
func readTokenLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	t := strings.TrimSpace(line)
	if t == "" || strings.ContainsAny(t, " \t") {
		return "", usageError{"no token was given; paste the device token on one line"}
	}
	return t, nil
}

// cmdLogins is `lembas logins`: name, instance and address; never a token.
func cmdLogins(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError{"lembas logins takes no arguments"}
	}
	all := readLogins()
	if len(all) == 0 {
		fmt.Fprintln(stdout, linkText("no_logins"))
		return nil
	}
	for _, l := range all {
		line := fmt.Sprintf("%s\t%s\t%s", l.Name, l.Instance, l.URL)
		if a := l.About; a != nil && (a.Name != "" || a.Version != "") {
			line += "\t" + linkText("logins_about", "name", oneLine(a.Name, 120), "version", oneLine(a.Version, 60))
		}
		fmt.Fprintln(stdout, strings.TrimRight(line, " "))
	}
	return nil
}

// cmdLogout is `lembas logout [NAME]`.
func cmdLogout(args []string, stdout io.Writer) error {
	if len(args) > 1 {
		return usageError{"lembas logout takes at most one login name"}
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	l, err := findLogin(name)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(loginsDir(), l.Name+".json")); err != nil {
		return errorf("logging out of %s: %v", l.Name, err)
	}
	fmt.Fprintln(stdout, linkText("logged_out", "name", l.Name))
	return nil
}

// cmdTrust is `lembas trust [DIR]`, `lembas trust --list`; untrust is
// `lembas untrust DIR`.
func cmdTrust(args []string, trust bool, stdout io.Writer) error {
	if trust && len(args) == 1 && args[0] == "--list" {
		var m map[string]bool
		if data, err := os.ReadFile(trustFile()); err == nil {
			json.Unmarshal(data, &m)
		}
		var dirs []string
		for d, t := range m {
			if t {
				dirs = append(dirs, d)
			}
		}
		sort.Strings(dirs)
		if len(dirs) == 0 {
			fmt.Fprintln(stdout, linkText("no_trusted"))
		}
		for _, d := range dirs {
			fmt.Fprintln(stdout, d)
		}
		return nil
	}
	if len(args) > 1 || (!trust && len(args) != 1) {
		return usageError{"usage: lembas trust [DIR] | lembas trust --list | lembas untrust DIR"}
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	root, err := projectRoot(expandTilde(dir))
	if err != nil {
		return errorf("%s: %v; name an existing folder", dir, err)
	}
	if err := setTrust(root, trust); err != nil {
		return err
	}
	if trust {
		fmt.Fprintln(stdout, linkText("trusted", "dir", root))
	} else {
		fmt.Fprintln(stdout, linkText("untrusted", "dir", root))
	}
	return nil
}
