package appliance

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/stream/sessions"
	"lakehouse/table"
)

// observedTables are the tables an observation reports, in pipeline order:
// the user's models (mts, nil: none) after the built-in marts.
func observedTables(mts *marts.Marts) []string {
	out := append([]string{}, table.Tables...)
	out = append(out, marts.OpsRuns, marts.OpsAssetChecks)
	out = append(out, marts.GoldTables...)
	if mts != nil {
		out = append(out, mts.ModelTables()...)
	}
	return out
}

// observe gathers the whole observation. Failures of one part are
// reported in it (a topic's, query's or table's Error), never returned.
func (a *Appliance) Observe(ctx context.Context) observe.Observation {
	o := a.observeBrief(ctx)
	o.Brief = false
	o.Health, o.Log, o.Settings = a.health.State(), a.tel.Logs.Newest(), a.settings()
	ing, mts := a.Components()
	if ing != nil {
		st := ing.Stats()
		a.tel.ObserveSeen(st.Seen)
		o.Ingest = &observe.Ingest{Seen: st.Seen, Appended: st.Appended, DLQ: st.DLQ, Canary: st.Canary, Batches: st.Batches,
			Bytes: st.Bytes, Reconnects: st.Reconnects, Oversized: st.Oversized, BadIDs: st.BadIDs, Position: st.Position,
			Connected: st.Connected, LastError: st.LastError, Paused: st.Paused, RatePerSecond: a.tel.IngestRate()}
		o.Hops.SourceSeen = st.Seen
	}
	for i, t := range o.Topics {
		// The partitions' offsets only the whole observation shows
		// (/metrics, the dashboard): /status, polled often, goes without.
		o.Topics[i].Partitions, _ = a.db.Offsets(ctx, t.Name)
		switch t.Name {
		case ingest.DefaultTopic:
			o.Hops.Broker = t.Records
		case ingest.DefaultDLQTopic:
			o.Hops.DLQ = t.Records
		}
	}
	for _, id := range observedTables(mts) {
		if a.lake == nil {
			break // --role ingest
		}
		st, err := a.lake.Stats(ctx, id)
		if err != nil {
			if !errors.Is(err, table.ErrNoSuchTable) {
				o.Tables = append(o.Tables, observe.Table{Name: id, Error: err.Error()})
			}
			continue
		}
		o.Tables = append(o.Tables, observe.Table{Name: id, Stats: st})
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
	if a.lake != nil {
		odd, err := a.lake.OddTables(ctx)
		o.OddTables = odd
		if err != nil {
			o.OddErr = err.Error()
		}
	}
	o.Fresh = a.observeFreshness(o.At)
	if a.disk != nil {
		d := a.disk.Observe(o.At)
		o.Disk = &d
	}
	if mts != nil {
		if rep, ok := mts.LastReport(); ok {
			o.Refresh = refreshOf(rep)
		}
	}
	return o
}

// observeBrief gathers the part of an observation /status projects: the
// broker's topics (their counts, not their partitions), the queries (only the named ones, if any: each query's
// lag reads its source, for silver and sessions table metadata), the Go
// runtime and the object store's requests.
func (a *Appliance) observeBrief(ctx context.Context, only ...string) observe.Observation {
	now := a.tel.Now()
	o := observe.Observation{At: now, Started: a.tel.Started, Version: a.cfg.Version, Brief: true,
		Runtime: observe.ReadRuntime(), ObjectStore: a.objectStoreRequests()}
	if topics, err := a.db.Topics(ctx); err == nil {
		for _, t := range topics {
			ot := observe.Topic{Name: t.Name}
			n, err := a.held.Count(ctx, t)
			switch {
			case err != nil:
				ot.Records, ot.Error = t.Messages(), err.Error() // an upper bound on a sparse log
			case broker.IsSparse(a.db):
				ot.Records, ot.Appended = n, n // Kafka does not say what it trimmed
			default:
				ot.Records, ot.Appended = n, t.Stored() // held plus trimmed: dense offsets only
			}
			o.Topics = append(o.Topics, ot)
		}
	}
	o.Queries = a.observeQueries(ctx, now, only)
	return o
}

// refreshOf is a marts report as an observation shows it.
func refreshOf(rep marts.Report) *observe.Refresh {
	r := &observe.Refresh{RunID: rep.RunID, Started: rep.Started, DurationS: rep.Duration.Seconds(), Scope: rep.Scope,
		Rows: rep.Rows, Err: rep.Err, Highlights: observe.Highlights{Headline: rep.Highlights.Headline}}
	for _, c := range rep.Checks {
		r.Checks = append(r.Checks, observe.Check(c))
	}
	for _, l := range rep.Highlights.Lists {
		r.Highlights.Lists = append(r.Highlights.Lists, observe.HighlightList(l))
	}
	return r
}

func (a *Appliance) observeQueries(ctx context.Context, now time.Time, only []string) []observe.Query {
	a.mu.Lock()
	names := make([]string, 0, len(a.queries))
	for n := range a.queries {
		if len(only) == 0 || slices.Contains(only, n) {
			names = append(names, n)
		}
	}
	a.mu.Unlock()
	sort.Slice(names, func(i, j int) bool {
		if x, y := queryOrder(names[i]), queryOrder(names[j]); x != y {
			return x < y
		}
		return names[i] < names[j]
	})
	var out []observe.Query
	for _, n := range names {
		a.mu.Lock()
		q := a.queries[n]
		a.mu.Unlock()
		qo := observe.Query{Name: n, QueryID: q.QueryID(), Batch: -1}
		qo.IDChanges, qo.PreviousQueryID = q.IDChange()
		if pause, ok := q.Paused(); ok {
			qo.Paused = &observe.Pause{Since: pause.Since, Attempts: pause.Attempts, Err: pause.Err, Next: pause.Next}
		}
		if lag, batch, err := q.CurrentLag(ctx); err != nil {
			qo.Error = err.Error()
		} else {
			qo.Lag, qo.Batch = lag, batch
		}
		if t, ok := a.tel.Query(n); ok {
			qo.Totals = t.Wire()
			qo.LastBatchSecond, qo.LastCommitSec = t.Last.Total.Seconds(), t.Last.Commit.Seconds()
			if qo.Lag > 0 {
				since := t.CaughtUpAt
				if since.IsZero() {
					since = a.tel.Started
				}
				qo.LagSeconds = now.Sub(since).Seconds()
			}
		} else if qo.Lag > 0 {
			qo.LagSeconds = now.Sub(a.tel.Started).Seconds()
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
	case telemetry.FreshQuery:
		return 1
	case sessions.QueryName:
		return 2
	case stream.DLQQuery:
		return 3
	}
	return 4
}

func (a *Appliance) observeFreshness(now time.Time) observe.Freshness {
	series, intake, event := a.tel.FreshSeries()
	f := observe.Freshness{Table: table.SilverEdits, NowS: observe.Float(math.NaN()), HourP50: observe.Float(intake.Quantile(0.5)),
		HourP95: observe.Float(intake.Quantile(0.95)), EventHourP50: observe.Float(event.Quantile(0.5)), Series: series}
	if t, ok := a.tel.Query(telemetry.FreshQuery); ok && !t.Newest.IsZero() {
		f.NowS = observe.Float(now.Sub(t.Newest).Seconds())
	}
	return f
}

// objectStoreRequests is the lake's count of S3 requests, nil when it
// counts none.
func (a *Appliance) objectStoreRequests() *table.ObjectStoreRequests {
	if a.lake == nil {
		return nil
	}
	r, ok := a.lake.ObjectStoreRequests()
	if !ok {
		return nil
	}
	return &r
}
