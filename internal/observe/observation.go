package observe

import (
	"math"
	"strconv"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// Observation is the appliance's picture of itself at one moment: what the
// dashboard (/api/status), the metrics (/metrics), readiness (/readyz) and
// `lakehouse status` all show, gathered from the components themselves
// (the broker's offsets, each query's checkpoint and source, each table's
// current metadata) plus the telemetry the batches fed. A brief one
// (Brief) holds only Topics (without their partitions), Queries, Runtime
// and ObjectStore.
type Observation struct {
	At       time.Time         `json:"at"`
	Started  time.Time         `json:"started"`
	Version  string            `json:"version"`
	Brief    bool              `json:"brief,omitempty"`
	Health   Health            `json:"health"`
	Ingest   *Ingest           `json:"ingest,omitempty"`
	Topics   []Topic           `json:"topics"`
	Queries  []Query           `json:"queries"`
	Tables   []Table           `json:"tables"`
	Fresh    Freshness         `json:"freshness"`
	Refresh  *Refresh          `json:"refresh,omitempty"`
	Log      []LogEntry        `json:"log"`
	Runtime  *Runtime          `json:"runtime,omitempty"`
	Hops     Hops              `json:"hops"`
	Disk     *Disk             `json:"disk,omitempty"`
	Settings map[string]string `json:"settings"`
	// OddTables are catalog entries the lake does not accept (a client's
	// table under a second warehouse root, or with its metadata where the
	// location rule refuses it): the appliance runs and serves without
	// them; `lakehouse catalog` lists and drops them offline.
	OddTables []table.OddTable `json:"odd_tables,omitempty"`
	// OddErr says why the catalog's entries could not be checked.
	OddErr string `json:"odd_tables_error,omitempty"`
	// ObjectStore counts the requests sent to an S3 warehouse since start
	// (absent when nothing is counted: local disk, a REST catalog).
	ObjectStore *table.ObjectStoreRequests `json:"object_store_requests,omitempty"`
}

// Health is readiness as last evaluated.
type Health struct {
	Ready bool `json:"ready"`
	// Reasons say what is wrong, one line each (empty when ready).
	Reasons []string `json:"reasons,omitempty"`
	// Warnings say what will be wrong soon (the disk reserve near), one
	// line each; they do not make the appliance unready.
	Warnings []string `json:"warnings,omitempty"`
	// Progressing is false when a query has stopped moving (an error, or
	// input waiting and no batch): the systemd watchdog is fed only while
	// it is true.
	Progressing bool `json:"progressing"`
	// IngestDown says why ingest has had no connection for too long
	// (empty otherwise): /healthz is not "ok" then, since a process that
	// cannot reach its source is not doing its job, whatever the rest does.
	IngestDown string    `json:"ingest_down,omitempty"`
	CheckedAt  time.Time `json:"checked_at"`
}

// Ingest is the SSE client's counters since start.
type Ingest struct {
	Seen          int64   `json:"seen"`
	Appended      int64   `json:"appended"`
	DLQ           int64   `json:"dead_lettered"`
	Canary        int64   `json:"canary"`
	Batches       int64   `json:"batches"`
	Bytes         int64   `json:"bytes"`
	Reconnects    int64   `json:"reconnects"`
	Oversized     int64   `json:"oversized_frames"`
	BadIDs        int64   `json:"bad_ids"`
	Position      string  `json:"position"`
	Connected     bool    `json:"connected"`
	LastError     string  `json:"last_error,omitempty"`
	Paused        string  `json:"paused,omitempty"`
	RatePerSecond float64 `json:"rate_per_s"`
}

// Topic is one broker topic.
type Topic struct {
	Name    string `json:"name"`
	Records int64  `json:"records"` // what it holds now (an upper bound when Error is set)
	// Appended is every record the topic ever stored: what it holds plus
	// what retention trimmed (on Kafka, which does not say what it
	// trimmed, what it holds).
	Appended   int64                     `json:"appended"`
	Partitions []broker.PartitionOffsets `json:"partitions"`
	Error      string                    `json:"error,omitempty"` // why Records could not be counted
}

// Query is one streaming query.
type Query struct {
	Name            string  `json:"name"`
	QueryID         string  `json:"query_id"`
	Batch           int64   `json:"batch"` // last committed batch id (-1: none)
	Lag             int64   `json:"lag"`   // source units beyond it, now
	LagSeconds      float64 `json:"lag_s"`
	Error           string  `json:"error,omitempty"`
	Paused          *Pause  `json:"paused,omitempty"`
	IDChanges       int64   `json:"query_id_changes"`
	PreviousQueryID string  `json:"previous_query_id,omitempty"`
	LastBatchSecond float64 `json:"last_batch_s"`
	LastCommitSec   float64 `json:"last_commit_s"`
	Totals          Totals  `json:"totals"`
}

// Pause is a query waiting out storage that is full or unreachable.
type Pause struct {
	Since    time.Time `json:"since"`    // the first failure of this pause
	Attempts int       `json:"attempts"` // failures so far
	Err      string    `json:"error"`    // the last one
	Next     time.Time `json:"next"`     // when it retries
}

// Totals are a query's batches since the process started.
type Totals struct {
	Batches     int64     `json:"batches"`
	RowsIn      int64     `json:"rows_in"`
	RowsOut     int64     `json:"rows_out"`
	Skipped     int64     `json:"rows_skipped"` // not the query's kind of row (silver: not an edit or new page)
	Late        int64     `json:"rows_late"`
	Duplicates  int64     `json:"rows_duplicate"`
	Unparseable int64     `json:"rows_unparseable"`
	LastAt      time.Time `json:"last_batch_at,omitzero"`
	CaughtUpAt  time.Time `json:"caught_up_at,omitzero"` // last time a batch ended with nothing left to read
	Newest      time.Time `json:"newest,omitzero"`       // newest committed time of the sink's time column
	// The sums of the batches' durations (read to commit entry) and of
	// their table commits, seconds: a sampler derives the mean of each
	// between two samples.
	BatchSeconds  float64 `json:"batch_s"`
	CommitSeconds float64 `json:"commit_s"`
}

// Table is one table's current metadata.
type Table struct {
	Name string `json:"name"`
	table.Stats
	Error string `json:"error,omitempty"`
}

// Freshness is silver's freshness. The hour's p50 and p95 and the series
// are the appliance's delay: commit time minus the broker's append time of
// each record silver read (what the benchmarks' 1 s figure measures). The
// event figures are commit (or now) minus the events' meta.dt, which also
// holds Wikimedia's delay and, in a replay, the recording's age.
type Freshness struct {
	Table        string       `json:"table"`
	HourP50      Float        `json:"hour_p50_s"`
	HourP95      Float        `json:"hour_p95_s"`
	EventHourP50 Float        `json:"event_hour_p50_s"`
	NowS         Float        `json:"now_s"` // now minus the newest committed meta.dt (null: none yet)
	Series       []FreshPoint `json:"series"`
}

// FreshPoint is one minute of the freshness chart: p50 and p95 of the
// appliance's delay over the records silver read, and the p50 of the
// events' age over the rows it committed.
type FreshPoint struct {
	Minute   time.Time `json:"minute"`
	Records  uint64    `json:"records"` // bronze records silver read
	Rows     uint64    `json:"rows"`    // silver rows committed
	P50      float64   `json:"p50_s"`
	P95      float64   `json:"p95_s"`
	EventP50 Float     `json:"event_p50_s"` // null: no silver row that minute
}

// Float is a float64 that encodes NaN and infinities as null (JSON has
// neither), and decodes null as NaN.
type Float float64

func (f Float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'f', -1, 64), nil
}

func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*f = Float(v)
	return err
}

// Refresh is the last marts refresh.
type Refresh struct {
	RunID      string           `json:"run_id"`
	Started    time.Time        `json:"started"`
	DurationS  float64          `json:"duration_s"`
	Scope      string           `json:"scope"` // what it rebuilt: "full (why)" or the days that changed
	Rows       map[string]int64 `json:"rows"`
	Checks     []Check          `json:"checks"`
	Highlights Highlights       `json:"highlights"`
	Err        string           `json:"error,omitempty"` // why the refresh could not run to its end
}

// Check is one asset check's result; its fields are marts.Check's, so one
// converts to the other.
type Check struct {
	Name      string
	Asset     string
	Passed    bool
	Observed  int64
	Expected  int64
	Numbers   map[string]int64
	Message   string
	CheckedAt time.Time
}

// Highlights are a few top rows of the marts, as the demo prints them.
type Highlights struct {
	Headline string          `json:"headline"`
	Lists    []HighlightList `json:"lists,omitempty"`
}

// HighlightList is a few top rows of one mart.
type HighlightList struct {
	Title string   `json:"title"`
	Items []string `json:"items"`
}

// Hops are the counts along the pipeline, source to gold.
type Hops struct {
	SourceSeen int64 `json:"source_seen"`
	Broker     int64 `json:"broker"`
	DLQ        int64 `json:"dlq"`
	Bronze     int64 `json:"bronze"`
	Silver     int64 `json:"silver"`
	Sessions   int64 `json:"sessions"`
	Gold       int64 `json:"gold"`
}

// LogEntry is one warning or error the dashboard lists.
type LogEntry struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"`
	Msg   string    `json:"msg"`
	Attrs string    `json:"attrs,omitempty"`
}

// Disk is the data directory's disk budget: what each component takes,
// how fast the directory grows, and how long the file system's free space
// lasts at that pace before the disk reserve stops ingest.
type Disk struct {
	Dir        string     `json:"dir"`
	Components []DiskPart `json:"components"` // broker.db, catalog.db, checkpoints, warehouse (when local), other
	Used       int64      `json:"used_bytes"` // the whole data directory
	FSBytes    int64      `json:"fs_bytes"`   // the file system's size
	Free       int64      `json:"free_bytes"` // what an unprivileged writer has left on it
	Reserve    int64      `json:"reserve_bytes"`
	GrowthDay  Float      `json:"growth_bytes_per_day"` // over the last day (at most) of samples; null until measured
	DaysLeft   Float      `json:"days_left"`            // (free - reserve) / growth; null when not growing or not measured
	MeasuredS  float64    `json:"measured_s"`           // the span the growth is taken over
	Warning    string     `json:"warning,omitempty"`    // set when the reserve is near
}

// DiskPart is one component of the data directory.
type DiskPart struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}
