package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", req.URL.Path, err)
	}
	return nil
}
