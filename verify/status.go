package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Status is what a running appliance serves at GET /status: the broker's
// message counts per topic and, per streaming query, its last batch and its
// current lag (source units not yet committed). Prove polls it to kill the
// child mid-backlog and to know when the pipeline has drained.
type Status struct {
	Topics  map[string]int64       `json:"topics"`
	Queries map[string]QueryStatus `json:"queries"`
}

// QueryStatus is one streaming query in Status.
type QueryStatus struct {
	Batch   int64  `json:"batch"` // last committed batch id (-1: none)
	Lag     int64  `json:"lag"`   // units beyond the last committed batch, now
	QueryID string `json:"query_id"`
	Error   string `json:"error,omitempty"`
}

// StatusPath is where the appliance serves Status.
const StatusPath = "/status"

// StatusLinePrefix starts the line the appliance prints on stderr with the
// address of its HTTP surface, so a parent process can find it.
const StatusLinePrefix = "lakehouse: http listening on "

func fetchStatus(ctx context.Context, base string) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+StatusPath, nil)
	if err != nil {
		return Status{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Status{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var s Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return Status{}, fmt.Errorf("decode status: %w", err)
	}
	return s, nil
}
