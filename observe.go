package main

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/stream/sessions"
	"lakehouse/table"
	"lakehouse/verify"
)

// observation is the appliance's picture of itself at one moment: what the
// dashboard (/api/status), the metrics (/metrics), readiness (/readyz) and
// `lakehouse status` all show. It is gathered in one place, from the
// components themselves (the broker's offsets, each query's checkpoint and
// source, each table's current metadata) plus the telemetry the batches fed.
type observation struct {
	At       time.Time             `json:"at"`
	Started  time.Time             `json:"started"`
	Version  string                `json:"version"`
	Health   healthState           `json:"health"`
	Ingest   *ingestObs            `json:"ingest,omitempty"`
	Topics   []topicObs            `json:"topics"`
	Queries  []queryObs            `json:"queries"`
	Tables   []tableObs            `json:"tables"`
	Fresh    freshObs              `json:"freshness"`
	Refresh  *refreshObs           `json:"refresh,omitempty"`
	Log      []logEntry            `json:"log"`
	Runtime  *verify.RuntimeStatus `json:"runtime,omitempty"`
	Hops     hops                  `json:"hops"`
	Disk     *diskObs              `json:"disk,omitempty"`
	Settings map[string]string     `json:"settings"`
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

type ingestObs struct {
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

type topicObs struct {
	Name       string                    `json:"name"`
	Records    int64                     `json:"records"`
	Partitions []broker.PartitionOffsets `json:"partitions"`
}

type queryObs struct {
	Name            string        `json:"name"`
	QueryID         string        `json:"query_id"`
	Batch           int64         `json:"batch"`
	Lag             int64         `json:"lag"`
	LagSeconds      float64       `json:"lag_s"`
	Error           string        `json:"error,omitempty"`
	Paused          *stream.Pause `json:"paused,omitempty"`
	IDChanges       int64         `json:"query_id_changes"`
	PreviousQueryID string        `json:"previous_query_id,omitempty"`
	LastBatchSecond float64       `json:"last_batch_s"`
	LastCommitSec   float64       `json:"last_commit_s"`
	Totals          queryTotals   `json:"totals"`
}

type tableObs struct {
	Name string `json:"name"`
	table.Stats
	Error string `json:"error,omitempty"`
}

// freshObs is silver's freshness. The hour's p50 and p95 and the series
// are the appliance's delay: commit time minus the broker's append time of
// each record silver read (what the benchmarks' 1 s figure measures). The
// event figures are commit (or now) minus the events' meta.dt, which also
// holds Wikimedia's delay and, in a replay, the recording's age.
type freshObs struct {
	Table        string       `json:"table"`
	HourP50      jsonFloat    `json:"hour_p50_s"`
	HourP95      jsonFloat    `json:"hour_p95_s"`
	EventHourP50 jsonFloat    `json:"event_hour_p50_s"`
	NowS         jsonFloat    `json:"now_s"` // now minus the newest committed meta.dt (null: none yet)
	Series       []freshPoint `json:"series"`
}

// jsonFloat is a float64 that encodes NaN and infinities as null.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'f', -1, 64), nil
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jsonFloat(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*f = jsonFloat(v)
	return err
}

type refreshObs struct {
	RunID      string           `json:"run_id"`
	Started    time.Time        `json:"started"`
	DurationS  float64          `json:"duration_s"`
	Scope      string           `json:"scope"` // what it rebuilt: "full (why)" or the days that changed
	Rows       map[string]int64 `json:"rows"`
	Checks     []marts.Check    `json:"checks"`
	Highlights marts.Highlights `json:"highlights"`
	Err        string           `json:"error,omitempty"` // why the refresh could not run to its end
}

// hops are the counts along the pipeline, source to gold.
type hops struct {
	SourceSeen int64 `json:"source_seen"`
	Broker     int64 `json:"broker"`
	DLQ        int64 `json:"dlq"`
	Bronze     int64 `json:"bronze"`
	Silver     int64 `json:"silver"`
	Sessions   int64 `json:"sessions"`
	Gold       int64 `json:"gold"`
}

// observedTables are the tables an observation reports, in pipeline order.
func observedTables() []string {
	out := append([]string{}, table.Tables...)
	out = append(out, marts.OpsRuns, marts.OpsAssetChecks)
	return append(out, marts.GoldTables...)
}

// observe gathers an observation. Failures of one part are reported in it
// (a query's or table's Error), never returned.
func (p *pipeline) observe(ctx context.Context) observation {
	now := p.tel.now()
	o := observation{At: now, Started: p.tel.started, Version: buildVersion(), Health: p.health.state(),
		Log: p.tel.logs.newest(), Runtime: runtimeStatus(), Settings: p.settings()}
	ing, mts := p.components()
	if ing != nil {
		st := ing.Stats()
		p.tel.observeSeen(st.Seen)
		o.Ingest = &ingestObs{Seen: st.Seen, Appended: st.Appended, DLQ: st.DLQ, Canary: st.Canary, Batches: st.Batches,
			Bytes: st.Bytes, Reconnects: st.Reconnects, Oversized: st.Oversized, BadIDs: st.BadIDs, Position: st.Position,
			Connected: st.Connected, LastError: st.LastError, Paused: st.Paused, RatePerSecond: p.tel.ingestRate()}
		o.Hops.SourceSeen = st.Seen
	}
	if topics, err := p.db.Topics(ctx); err == nil {
		for _, t := range topics {
			offs, _ := p.db.Offsets(ctx, t.Name)
			n, err := p.held.Count(ctx, t)
			if err != nil {
				n = t.Messages() // an upper bound on a sparse log
			}
			o.Topics = append(o.Topics, topicObs{Name: t.Name, Records: n, Partitions: offs})
			switch t.Name {
			case ingest.DefaultTopic:
				o.Hops.Broker = n
			case ingest.DefaultDLQTopic:
				o.Hops.DLQ = n
			}
		}
	}
	o.Queries = p.observeQueries(ctx, now)
	for _, id := range observedTables() {
		if p.lake == nil {
			break // --role ingest
		}
		st, err := p.lake.Stats(ctx, id)
		if err != nil {
			if !errors.Is(err, table.ErrNoSuchTable) {
				o.Tables = append(o.Tables, tableObs{Name: id, Error: err.Error()})
			}
			continue
		}
		o.Tables = append(o.Tables, tableObs{Name: id, Stats: st})
		switch {
		case id == table.Bronze:
			o.Hops.Bronze = st.Records
		case id == table.SilverEdits:
			o.Hops.Silver = st.Records
		case id == table.EditorSessions:
			o.Hops.Sessions = st.Records
		case slices.Contains(marts.GoldTables, id):
			o.Hops.Gold += st.Records
		}
	}
	if p.lake != nil {
		odd, err := p.lake.OddTables(ctx)
		o.OddTables = odd
		if err != nil {
			o.OddErr = err.Error()
		}
	}
	o.ObjectStore = p.objectStoreRequests()
	o.Fresh = p.observeFreshness(now)
	if p.disk != nil {
		d := p.disk.observe(now)
		o.Disk = &d
	}
	if mts != nil {
		if rep, ok := mts.LastReport(); ok {
			o.Refresh = &refreshObs{RunID: rep.RunID, Started: rep.Started, DurationS: rep.Duration.Seconds(),
				Scope: rep.Scope, Rows: rep.Rows, Checks: rep.Checks, Highlights: rep.Highlights, Err: rep.Err}
		}
	}
	return o
}

func (p *pipeline) observeQueries(ctx context.Context, now time.Time) []queryObs {
	p.mu.Lock()
	names := make([]string, 0, len(p.queries))
	for n := range p.queries {
		names = append(names, n)
	}
	p.mu.Unlock()
	sort.Slice(names, func(i, j int) bool {
		if a, b := queryOrder(names[i]), queryOrder(names[j]); a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	var out []queryObs
	for _, n := range names {
		p.mu.Lock()
		q := p.queries[n]
		p.mu.Unlock()
		qo := queryObs{Name: n, QueryID: q.QueryID(), Batch: -1}
		qo.IDChanges, qo.PreviousQueryID = q.IDChange()
		if pause, ok := q.Paused(); ok {
			qo.Paused = &pause
		}
		if lag, batch, err := q.CurrentLag(ctx); err != nil {
			qo.Error = err.Error()
		} else {
			qo.Lag, qo.Batch = lag, batch
		}
		if t, ok := p.tel.query(n); ok {
			qo.Totals = t
			qo.LastBatchSecond, qo.LastCommitSec = t.Last.Total.Seconds(), t.Last.Commit.Seconds()
			if qo.Lag > 0 {
				since := t.CaughtUpAt
				if since.IsZero() {
					since = p.tel.started
				}
				qo.LagSeconds = now.Sub(since).Seconds()
			}
		} else if qo.Lag > 0 {
			qo.LagSeconds = now.Sub(p.tel.started).Seconds()
		}
		out = append(out, qo)
	}
	return out
}

// queryOrder is a query's place in pipeline order: bronze, silver,
// sessions, then the dead-letter query beside them.
func queryOrder(name string) int {
	switch name {
	case stream.BronzeQuery:
		return 0
	case freshQuery:
		return 1
	case sessions.QueryName:
		return 2
	case stream.DLQQuery:
		return 3
	}
	return 4
}

func (p *pipeline) observeFreshness(now time.Time) freshObs {
	series, intake, event := p.tel.freshSeries()
	f := freshObs{Table: table.SilverEdits, NowS: jsonFloat(math.NaN()), HourP50: jsonFloat(intake.Quantile(0.5)),
		HourP95: jsonFloat(intake.Quantile(0.95)), EventHourP50: jsonFloat(event.Quantile(0.5)), Series: series}
	if t, ok := p.tel.query(freshQuery); ok && !t.Newest.IsZero() {
		f.NowS = jsonFloat(now.Sub(t.Newest).Seconds())
	}
	return f
}

// objectStoreRequests is the lake's count of S3 requests, nil when it
// counts none.
func (p *pipeline) objectStoreRequests() *table.ObjectStoreRequests {
	if p.lake == nil {
		return nil
	}
	r, ok := p.lake.ObjectStoreRequests()
	if !ok {
		return nil
	}
	return &r
}
