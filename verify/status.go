package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"lakehouse/internal/humanize"
	"lakehouse/table"
)

// Status is what a running appliance serves at GET /status: the broker's
// message counts per topic, per streaming query its last batch and its
// current lag (source units not yet committed), and the Go runtime's memory
// and goroutines. Prove polls it to kill the child mid-backlog and to know
// when the pipeline has drained; Soak samples it.
type Status struct {
	Topics map[string]int64 `json:"topics"` // messages the broker holds now
	// Appended is, per topic, every message the broker ever stored: what
	// it holds plus what retention trimmed (absent from older appliances).
	Appended map[string]int64       `json:"appended,omitempty"`
	Queries  map[string]QueryStatus `json:"queries"`
	Runtime  *RuntimeStatus         `json:"runtime,omitempty"`
	// ObjectStore is the requests the appliance sent to its S3 warehouse
	// since it started (absent: not counted, or an older appliance).
	ObjectStore *table.ObjectStoreRequests `json:"object_store_requests,omitempty"`
}

// RuntimeStatus is the appliance process's Go runtime in Status, read from
// runtime/metrics (no stop-the-world).
type RuntimeStatus struct {
	HeapInUseBytes uint64 `json:"heap_in_use_bytes"` // spans in use: objects plus their free slots (MemStats.HeapInuse)
	HeapObjects    uint64 `json:"heap_objects"`      // objects allocated and not yet freed
	LiveHeapBytes  uint64 `json:"live_heap_bytes"`   // heap the last GC cycle marked live
	// HeldBytes is all the memory the Go runtime has mapped and not handed
	// back to the OS (heap, stacks, runtime metadata): the part of the
	// anonymous RSS that is Go's; the rest is C code (DuckDB) and libc.
	HeldBytes  uint64 `json:"held_bytes,omitempty"`
	GCCycles   uint64 `json:"gc_cycles"` // completed GC cycles
	Goroutines uint64 `json:"goroutines"`
}

// QueryStatus is one streaming query in Status.
type QueryStatus struct {
	Batch   int64  `json:"batch"` // last committed batch id (-1: none)
	Lag     int64  `json:"lag"`   // units beyond the last committed batch, now
	QueryID string `json:"query_id"`
	Error   string `json:"error,omitempty"`
	// Batches run since the process started, and the sums of their
	// durations (read to commit entry) and of their table commits, seconds:
	// a sampler derives the mean of each between two samples.
	Batches       int64   `json:"batches,omitempty"`
	BatchSeconds  float64 `json:"batch_s,omitempty"`
	CommitSeconds float64 `json:"commit_s,omitempty"`
}

// StatusPath is where the appliance serves Status; repeat ?query=NAME to
// limit it to some queries.
const StatusPath = "/status"

// StatusLinePrefix starts the line the appliance prints on stderr with the
// address of its HTTP surface, so a parent process can find it.
const StatusLinePrefix = "lakehouse: http listening on "

// fetchStatus asks the appliance for its status, limited to the named
// queries (none: all).
func fetchStatus(ctx context.Context, base string, queries ...string) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := base + StatusPath
	if len(queries) > 0 {
		u += "?" + url.Values{"query": queries}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
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

// Stored is how many messages topic ever stored: Appended, or what it
// holds when the status has no Appended.
func (s Status) Stored(topic string) int64 {
	if n, ok := s.Appended[topic]; ok {
		return n
	}
	return s.Topics[topic]
}

// Drained reports whether topic stored at least want messages (Stored:
// those retention trimmed count) and every query in the status has no lag
// and no error. A status with no queries is never drained.
func (s Status) Drained(topic string, want int64) bool {
	if s.Stored(topic) < want || len(s.Queries) == 0 {
		return false
	}
	for _, q := range s.Queries {
		if q.Lag != 0 || q.Error != "" {
			return false
		}
	}
	return true
}

// Lags describes each query's last batch and lag, sorted by name, for
// progress lines: "bronze batch 12 lag 0, silver batch 11 lag 500".
func (s Status) Lags() string {
	names := make([]string, 0, len(s.Queries))
	for n := range s.Queries {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s batch %d lag %d", n, s.Queries[n].Batch, s.Queries[n].Lag)
	}
	return strings.Join(parts, ", ")
}

// drainNote is what a drain waits on, shortest first for a bar that a
// terminal's width cuts: "bronze lag 0, silver lag 500; broker 20,500 of
// 20,500; batches bronze 41, silver 39".
func drainNote(s Status, want int64) string {
	names := make([]string, 0, len(s.Queries))
	for n := range s.Queries {
		names = append(names, n)
	}
	sort.Strings(names)
	lags := make([]string, len(names))
	batches := make([]string, len(names))
	for i, n := range names {
		lags[i] = fmt.Sprintf("%s lag %s", n, humanize.Count(s.Queries[n].Lag))
		batches[i] = fmt.Sprintf("%s %d", n, s.Queries[n].Batch)
	}
	return fmt.Sprintf("%s; broker %s of %s; batches %s", strings.Join(lags, ", "),
		humanize.Count(s.Stored(DefaultTopic)), humanize.Count(want), strings.Join(batches, ", "))
}
