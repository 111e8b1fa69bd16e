package observe

import (
	"fmt"
	"sort"
	"strings"

	"lakehouse/internal/humanize"
	"lakehouse/table"
)

// Status is what a running appliance serves at GET /status: a brief
// Observation's projection, kept in the shape pollers have always read.
// It holds the broker's message counts per topic, per streaming query its
// last batch and its current lag (source units not yet committed), and the
// Go runtime's memory and goroutines. Prove polls it to kill the child
// mid-backlog and to know when the pipeline has drained; the soak samples
// it.
type Status struct {
	Topics map[string]int64 `json:"topics"` // messages the broker holds now
	// Appended is, per topic, every message the broker ever stored: what
	// it holds plus what retention trimmed (absent from older appliances).
	Appended map[string]int64       `json:"appended,omitempty"`
	Queries  map[string]QueryStatus `json:"queries"`
	Runtime  *Runtime               `json:"runtime,omitempty"`
	// ObjectStore is the requests the appliance sent to its S3 warehouse
	// since it started (absent: not counted, or an older appliance).
	ObjectStore *table.ObjectStoreRequests `json:"object_store_requests,omitempty"`
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

// Status projects o onto the /status shape. A topic whose records could
// not be counted is left out, so a poller never takes an upper bound for
// a count.
func (o Observation) Status() Status {
	st := Status{Topics: map[string]int64{}, Appended: map[string]int64{}, Queries: map[string]QueryStatus{},
		Runtime: o.Runtime, ObjectStore: o.ObjectStore}
	for _, t := range o.Topics {
		if t.Error != "" {
			continue
		}
		st.Topics[t.Name] = t.Records
		st.Appended[t.Name] = t.Appended
	}
	for _, q := range o.Queries {
		st.Queries[q.Name] = QueryStatus{Batch: q.Batch, Lag: q.Lag, QueryID: q.QueryID, Error: q.Error,
			Batches: q.Totals.Batches, BatchSeconds: q.Totals.BatchSeconds, CommitSeconds: q.Totals.CommitSeconds}
	}
	return st
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

// DrainNote is what a drain of topic to want stored messages waits on,
// shortest first for a bar that a terminal's width cuts: "bronze lag 0,
// silver lag 500; broker 20,500 of 20,500; batches bronze 41, silver 39".
func (s Status) DrainNote(topic string, want int64) string {
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
		humanize.Count(s.Stored(topic)), humanize.Count(want), strings.Join(batches, ", "))
}
