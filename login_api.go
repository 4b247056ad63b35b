package main

// The instance's HTTP API a login uses beyond the model endpoints (acp.md,
// The HTTP API; protocol 3 shapes): GET /v1/usage for /usage, and
// GET/PUT /v1/me/personalization. Each is optional on an instance: a 404
// means it has none, and nothing is shown.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// instanceUsage is /v1/usage at protocol 3: costs per currency, never
// summed across currencies; the credit fields are null.
type instanceUsage struct {
	Month struct {
		From           string             `json:"from"`
		TokensIn       int64              `json:"tokens_in"`
		TokensOut      int64              `json:"tokens_out"`
		CostByCurrency map[string]float64 `json:"cost_by_currency"`
	} `json:"month"`
	Device struct {
		TokensIn       int64              `json:"tokens_in"`
		TokensOut      int64              `json:"tokens_out"`
		CostByCurrency map[string]float64 `json:"cost_by_currency"`
	} `json:"device"`
}

// apiRequest makes one request of the instance's API with the login's token.
func (l *loginRecord) apiRequest(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd *bytes.Reader
	if body != nil {
		rd = bytes.NewReader(rawJSON(body))
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(l.URL, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, errorNew(redactToken(err.Error(), l.Token))
	}
	return resp, nil
}

// usage reads /v1/usage; nil, nil when the instance has none (404).
func (l *loginRecord) usage(ctx context.Context) (*instanceUsage, error) {
	resp, err := l.apiRequest(ctx, "GET", "/v1/usage", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return nil, nil
	}
	if resp.StatusCode != 200 {
		return nil, errorf("reading the usage from %s: %s", l.Name, resp.Status)
	}
	var u instanceUsage
	if err := json.NewDecoder(limitBody(resp.Body)).Decode(&u); err != nil {
		return nil, errorf("reading the usage from %s: %v", l.Name, err)
	}
	return &u, nil
}

// money is costs per currency, each in its own sign, never summed.
func money(by map[string]float64) string {
	if len(by) == 0 {
		return linkText("usage_no_cost")
	}
	signs := map[string]string{"EUR": "€", "USD": "$", "GBP": "£"}
	var cur []string
	for c := range by {
		cur = append(cur, c)
	}
	sort.Strings(cur)
	var parts []string
	for _, c := range cur {
		if s, ok := signs[c]; ok {
			parts = append(parts, fmt.Sprintf("%s%.2f", s, by[c]))
		} else {
			parts = append(parts, fmt.Sprintf("%.2f %s", by[c], c))
		}
	}
	return strings.Join(parts, " + ")
}

// usageLines are /usage's lines for every login whose instance has usage.
func usageLines() []string {
	ctx := context.Background()
	var out []string
	for _, l := range readLogins() {
		u, err := l.usage(ctx)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		if u == nil {
			continue
		}
		out = append(out, linkText("usage_month", "login", l.Name, "from", u.Month.From, "in", u.Month.TokensIn, "out", u.Month.TokensOut,
			"cost", money(u.Month.CostByCurrency)))
		out = append(out, linkText("usage_device", "in", u.Device.TokensIn, "out", u.Device.TokensOut, "cost", money(u.Device.CostByCurrency)))
	}
	return out
}

// getPersonalization reads the account's personalization.
func (l *loginRecord) getPersonalization(ctx context.Context) (*personalization, error) {
	resp, err := l.apiRequest(ctx, "GET", "/v1/me/personalization", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return nil, nil
	}
	if err := personalizationStatus(resp); err != nil {
		return nil, err
	}
	var p personalization
	if err := json.NewDecoder(limitBody(resp.Body)).Decode(&p); err != nil {
		return nil, errorf("reading the personalization from %s: %v", l.Name, err)
	}
	return &p, nil
}

// putPersonalization writes one changed field back, with enabled: true and
// nothing else, so the instance keeps what it has of the others.
func (l *loginRecord) putPersonalization(ctx context.Context, field, value string) error {
	switch field {
	case "personality", "personality_custom", "instructions":
	default:
		return errorf("%s is not a personalization field; use personality, personality_custom or instructions", field)
	}
	resp, err := l.apiRequest(ctx, "PUT", "/v1/me/personalization", map[string]any{field: value, "enabled": true})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return personalizationStatus(resp)
}

// personalizationStatus says a 403 or 422 plainly: the instance's detail
// when it gives one.
func personalizationStatus(resp *http.Response) error {
	if resp.StatusCode == 200 || resp.StatusCode == 204 {
		return nil
	}
	var body struct {
		Detail any `json:"detail"`
	}
	json.NewDecoder(limitBody(resp.Body)).Decode(&body)
	detail := detailText(body.Detail)
	switch resp.StatusCode {
	case 403:
		if detail == "" {
			detail = linkText("personalization_403")
		}
		return errorNew(detail)
	case 422:
		return errorNew(linkText("personalization_422", "detail", detail))
	}
	return errorf("the personalization: %s", resp.Status)
}

// detailText is an error body's detail in words: a string as it is, or a
// validation list ([{loc, msg, type}], as a FastAPI server sends a 422)
// as its messages, each after the field it names.
func detailText(d any) string {
	switch x := d.(type) {
	case string:
		return oneLine(x, 200)
	case []any:
		var parts []string
		for _, it := range x {
			m, _ := it.(map[string]any)
			msg, _ := m["msg"].(string)
			if msg == "" {
				continue
			}
			if loc, _ := m["loc"].([]any); len(loc) > 0 {
				if f, ok := loc[len(loc)-1].(string); ok {
					msg = f + ": " + msg
				}
			}
			parts = append(parts, msg)
		}
		return oneLine(strings.Join(parts, "; "), 200)
	}
	return ""
}

// configWriteBack is `lembas config set`'s second half for a
// personalization key: written to config.yaml, the change goes to the
// instance too when exactly one is logged in and has personalization
// available — a PUT of that field alone with enabled: true. An instance
// without it (404, available: false) keeps nothing and is not mentioned;
// a refusal (403, 422) is said with the instance's detail.
func configWriteBack(key, value string, stdout io.Writer) error {
	if !contains(thePersonalitySpec().Keys, key) {
		return nil
	}
	logins := readLogins()
	if len(logins) != 1 {
		return nil // none: the local keys are the ones used; several: which one is not known
	}
	l := logins[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(theLinkSpec().DeviceFlow.HTTPTimeoutS)*time.Second)
	defer cancel()
	p, err := l.getPersonalization(ctx)
	if err == nil && (p == nil || (p.Available != nil && !*p.Available)) {
		return nil
	}
	if err == nil {
		err = l.putPersonalization(ctx, key, value)
	}
	if err != nil {
		return errorNew(linkText("config_write_back_failed", "key", key, "login", l.Name, "reason", err.Error()))
	}
	fmt.Fprintln(stdout, linkText("config_written_back", "key", key, "login", l.Name))
	return nil
}

// instanceAbout reads GET /api/v1/instance at login: what the instance
// says of itself, for lembas logins. Optional: an error or a 404 is nil.
func (l *loginRecord) instanceAbout(ctx context.Context) *instanceAbout {
	resp, err := l.apiRequest(ctx, "GET", "/api/v1/instance", nil)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil
	}
	var a instanceAbout
	if json.NewDecoder(limitBody(resp.Body)).Decode(&a) != nil || (a.Name == "" && a.Version == "") {
		return nil
	}
	return &a
}
