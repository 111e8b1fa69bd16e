package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// StatusPath is where the appliance serves Status; repeat ?query=NAME to
// limit it to some queries.
const StatusPath = "/status"

// ObservationPath is where the appliance serves the whole Observation.
const ObservationPath = "/api/status"

// LinePrefix starts the line the appliance prints on stderr with the
// address of its HTTP surface, so a parent process can find it.
const LinePrefix = "lakehouse: http listening on "

// FetchStatus asks the appliance at base (http://host:port) for its
// Status, limited to the named queries (none: all). It gives up after 5 s.
func FetchStatus(ctx context.Context, base string, queries ...string) (Status, error) {
	u := base + StatusPath
	if len(queries) > 0 {
		u += "?" + url.Values{"query": queries}.Encode()
	}
	var s Status
	return s, getJSON(ctx, u, &s)
}

func getJSON(ctx context.Context, u string, v any) error {
	body, err := get(ctx, u, "", 5*time.Second)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w", u, err)
	}
	return nil
}

// get reads u, with token as the bearer token when set, giving up after
// timeout. A server that does not answer is a *url.Error; an answer other
// than 200 OK is an error with its status and body.
func get(ctx context.Context, u, token string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// FetchObservation asks the appliance at base (host:port, or a URL) for its
// whole Observation, with token as the bearer token when set, and returns
// the JSON as served. It gives up after 15 s. An appliance that does not
// answer is a *url.Error; one that refuses is an error with its answer.
func FetchObservation(ctx context.Context, base, token string) ([]byte, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return get(ctx, strings.TrimSuffix(base, "/")+ObservationPath, token, 15*time.Second)
}
