// Package metrics renders the appliance's observation in the Prometheus
// text format behind /metrics: the lakehouse_* families, read from one
// observation at every scrape (the components keep plain counters; only
// this package knows Prometheus), beside the Go runtime and process
// collectors.
//
// What survives a crash: nothing; counters restart from zero with the
// process, as Prometheus expects of a restart.
package metrics

import (
	"context"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"lakehouse/internal/httpbound"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/stream"
	"lakehouse/table"
)

// Source is what a scrape reads: one observation, each query's running
// totals (their histograms, which an observation does not carry), and the
// HTTP surface's connection limiter (nil before it serves).
type Source interface {
	Observe(ctx context.Context) observe.Observation
	Totals(query string) (telemetry.Totals, bool)
	Conns() *httpbound.Limiter
}

// NewRegistry returns the registry behind /metrics: the appliance's own
// metrics, read from src at every scrape, and the Go runtime and process
// collectors.
func NewRegistry(src Source) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&applianceCollector{src: src})
	return reg
}

// applianceCollector is an unchecked collector: its metrics depend on the
// topics, queries and tables present, so it describes none up front.
type applianceCollector struct{ src Source }

func (c *applianceCollector) Describe(chan<- *prometheus.Desc) {}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("lakehouse_"+name, help, labels, nil)
}

var (
	mBuild          = desc("build_info", "The appliance's build (always 1).", "version", "goversion")
	mReady          = desc("ready", "1 when /readyz says ready, else 0.")
	mIngestSeen     = desc("ingest_events_seen_total", "Events received from the source.")
	mIngestApp      = desc("ingest_events_appended_total", "Events appended to the recentchange topic.")
	mIngestDLQ      = desc("ingest_events_dead_lettered_total", "Events appended to the dead-letter topic (contract violations).")
	mIngestCanary   = desc("ingest_events_canary_total", "Canary events skipped.")
	mIngestBytes    = desc("ingest_received_bytes_total", "Event bytes received from the source.")
	mIngestRecon    = desc("ingest_reconnects_total", "Connection attempts after the first.")
	mIngestConn     = desc("ingest_connected", "1 while a stream response is open.")
	mIngestPaused   = desc("ingest_paused", "1 while ingest is not reading the source because the broker cannot write (a full disk, the disk reserve).")
	mIngestTooLarge = desc("ingest_frames_too_large_total", "SSE frames too large to read, skipped to the dead-letter topic.")
	mIngestBadIDs   = desc("ingest_ids_refused_total", "SSE ids refused as a resume position (not a valid header value, or too long).")
	mBrokerEnd      = desc("broker_end_offset", "Next offset of each partition.", "topic", "partition")
	mBrokerRecords  = desc("broker_records", "Records each topic holds.", "topic")
	mQueryLag       = desc("query_lag_records", "Source units a query has not committed yet.", "query")
	mQueryPaused    = desc("query_paused", "1 while a query waits out storage that is full or unreachable, retrying.", "query")
	mQueryLagSec    = desc("query_lag_seconds", "How long a query with a lag has not been caught up (0 when caught up).", "query")
	mQueryBatch     = desc("query_last_batch_id", "Last committed batch id.", "query")
	mQueryBatches   = desc("query_batches_total", "Batches committed since start.", "query")
	mQueryRowsIn    = desc("query_rows_in_total", "Rows read by a query's batches.", "query")
	mQueryRowsOut   = desc("query_rows_out_total", "Rows written by a query's batches.", "query")
	mQueryLate      = desc("query_rows_late_total", "Rows dropped as late (below the watermark).", "query")
	mQueryDup       = desc("query_rows_duplicate_total", "Rows dropped as duplicates.", "query")
	mQueryBad       = desc("query_rows_unparseable_total", "Rows that could not be parsed.", "query")
	mQueryIDChanges = desc("query_id_changes_total", "Query-id changes seen at start (a lost or replaced checkpoint).", "query")
	mBatchDur       = desc("query_batch_duration_seconds", "Duration of a batch, read to commit entry.", "query")
	mCommitDur      = desc("query_commit_duration_seconds", "Duration of a batch's table commit.", "query")
	mFreshness      = desc("table_freshness_seconds", "Now minus the newest committed time of a table (bronze: broker append time, silver: intake time).", "table")
	mRowAge         = desc("committed_row_age_seconds", "Age of each committed row at its commit (bronze: since broker append; silver: since intake).", "table")
	mSnapshots      = desc("table_snapshots", "Snapshots in a table's current metadata.", "table")
	mDataFiles      = desc("table_data_files", "Live data files of a table.", "table")
	mRecords        = desc("table_records", "Live rows of a table.", "table")
	mDataBytes      = desc("table_data_bytes", "Size of a table's live data files.", "table")
	mCheckPassed    = desc("asset_check_passed", "1 when the last refresh's asset check passed.", "check")
	mCheckObserved  = desc("asset_check_observed", "What the last refresh's asset check observed.", "check")
	mRefreshDur     = desc("marts_refresh_duration_seconds", "Duration of the last marts refresh.")
	mRefreshTime    = desc("marts_refresh_timestamp_seconds", "When the last marts refresh started (Unix time).")
	mHTTPConns      = desc("http_connections", "HTTP connections open.")
	mHTTPEvicted    = desc("http_connections_evicted_total", "Idle HTTP connections closed to make room at the cap (--http-max-conns).")
	mHTTPRefused    = desc("http_connections_refused_total", "HTTP connections closed at once at the cap, every open one having a request in flight.")
	mObjectStore    = desc("object_store_requests_total", "Requests sent to the S3 warehouse since start, by the kind S3 bills (LIST: a GET that lists); absent for a local warehouse or a REST catalog.", "method")
	mDiskBytes      = desc("disk_bytes", "Bytes a component of the data directory takes on disk (allocated blocks; walked at most every minute).", "component")
	mDiskFree       = desc("disk_free_bytes", "Free bytes on the data directory's file system.")
	mDiskReserve    = desc("disk_reserve_bytes", "The disk reserve (--disk-reserve): below it ingest stops storing.")
	mDiskGrowth     = desc("disk_growth_per_day_bytes", "Growth of the data directory per day over the last day of samples (absent until 10 minutes are measured).")
	mDiskDaysLeft   = desc("disk_days_left", "Days until the free space reaches the disk reserve at that growth (absent when not growing).")
	mBrokerStored   = desc("broker_stored_bytes", "Bytes a topic's records take in the broker's storage (compressed): the embedded broker's file, or the Kafka brokers' log directories.", "topic")
)

// sinkTables maps a query to the table its sink's time column describes.
var sinkTables = map[string]string{stream.BronzeQuery: table.Bronze, telemetry.FreshQuery: table.SilverEdits}

func (c *applianceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := c.src.Observe(ctx)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(mBuild, 1, o.Version, runtime.Version())
	gauge(mReady, b2f(o.Health.Ready))
	if lim := c.src.Conns(); lim != nil {
		gauge(mHTTPConns, float64(lim.Open()))
		counter(mHTTPEvicted, float64(lim.Evicted.Load()))
		counter(mHTTPRefused, float64(lim.Refused.Load()))
	}
	if in := o.Ingest; in != nil {
		counter(mIngestSeen, float64(in.Seen))
		counter(mIngestApp, float64(in.Appended))
		counter(mIngestDLQ, float64(in.DLQ))
		counter(mIngestCanary, float64(in.Canary))
		counter(mIngestBytes, float64(in.Bytes))
		counter(mIngestRecon, float64(in.Reconnects))
		gauge(mIngestConn, b2f(in.Connected))
		gauge(mIngestPaused, b2f(in.Paused != ""))
		counter(mIngestTooLarge, float64(in.Oversized))
		counter(mIngestBadIDs, float64(in.BadIDs))
	}
	if r := o.ObjectStore; r != nil {
		for m, n := range r.ByMethod() {
			counter(mObjectStore, float64(n), m)
		}
	}
	if d := o.Disk; d != nil {
		for _, c := range d.Components {
			gauge(mDiskBytes, float64(c.Bytes), c.Name)
		}
		gauge(mDiskFree, float64(d.Free))
		gauge(mDiskReserve, float64(d.Reserve))
		if g := float64(d.GrowthDay); !math.IsNaN(g) {
			gauge(mDiskGrowth, g)
		}
		if l := float64(d.DaysLeft); !math.IsNaN(l) {
			gauge(mDiskDaysLeft, l)
		}
	}
	for _, t := range o.Topics {
		gauge(mBrokerRecords, float64(t.Records), t.Name)
		var stored int64
		for _, po := range t.Partitions {
			stored += po.Stored
		}
		gauge(mBrokerStored, float64(stored), t.Name)
		for _, po := range t.Partitions {
			gauge(mBrokerEnd, float64(po.End), t.Name, strconv.Itoa(po.Partition))
		}
	}
	for _, q := range o.Queries {
		gauge(mQueryLag, float64(q.Lag), q.Name)
		gauge(mQueryPaused, b2f(q.Paused != nil), q.Name)
		gauge(mQueryLagSec, q.LagSeconds, q.Name)
		gauge(mQueryBatch, float64(q.Batch), q.Name)
		t := q.Totals
		counter(mQueryBatches, float64(t.Batches), q.Name)
		counter(mQueryRowsIn, float64(t.RowsIn), q.Name)
		counter(mQueryRowsOut, float64(t.RowsOut), q.Name)
		counter(mQueryLate, float64(t.Late), q.Name)
		counter(mQueryDup, float64(t.Duplicates), q.Name)
		counter(mQueryBad, float64(t.Unparseable), q.Name)
		counter(mQueryIDChanges, float64(q.IDChanges), q.Name)
		// The histograms are the telemetry's: an observation carries
		// only their sums.
		h, _ := c.src.Totals(q.Name)
		ch <- prometheus.MustNewConstHistogram(mBatchDur, h.BatchDur.Count, h.BatchDur.Sum, h.BatchDur.Buckets(), q.Name)
		ch <- prometheus.MustNewConstHistogram(mCommitDur, h.CommitDur.Count, h.CommitDur.Sum, h.CommitDur.Buckets(), q.Name)
		if tbl, ok := sinkTables[q.Name]; ok && !t.Newest.IsZero() {
			gauge(mFreshness, o.At.Sub(t.Newest).Seconds(), tbl)
			ch <- prometheus.MustNewConstHistogram(mRowAge, h.Freshness.Count(), h.Freshness.Sum, latencyBuckets(&h.Freshness), tbl)
		}
	}
	for _, t := range o.Tables {
		if t.Error != "" {
			continue
		}
		gauge(mSnapshots, float64(t.Snapshots), t.Name)
		gauge(mDataFiles, float64(t.DataFiles), t.Name)
		gauge(mRecords, float64(t.Records), t.Name)
		gauge(mDataBytes, float64(t.DataBytes), t.Name)
	}
	if r := o.Refresh; r != nil {
		gauge(mRefreshDur, r.DurationS)
		gauge(mRefreshTime, float64(r.Started.UnixMilli())/1000)
		for _, chk := range r.Checks {
			gauge(mCheckPassed, b2f(chk.Passed), chk.Name)
			gauge(mCheckObserved, float64(chk.Observed), chk.Name)
		}
	}
}

// latencyBuckets renders a stream.Histogram as cumulative Prometheus buckets.
func latencyBuckets(h *stream.Histogram) map[float64]uint64 {
	out := make(map[float64]uint64, len(stream.LatencyBounds))
	var cum uint64
	for i, b := range stream.LatencyBounds {
		cum += h.Counts[i]
		out[b] = cum
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
