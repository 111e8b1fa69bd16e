package ingest

import (
	"log/slog"
	"net/http"
	"time"

	"lakehouse/internal/recentchange"
)

// Defaults filled in by Run (and New) for zero Config fields.
const (
	DefaultURL = "https://stream.wikimedia.org/v2/stream/recentchange"
	// DefaultUserAgent names the client as Wikimedia's User-Agent policy
	// asks. The policy also wants a way to reach the operator: deployments
	// should set Config.UserAgent with their contact (URL or e-mail).
	DefaultUserAgent = "lakehouse-ingest/1.0 (embedded lakehouse appliance; Wikimedia EventStreams consumer) go-sse/0.12"
	DefaultSource    = "wikimedia"
	DefaultTopic     = "recentchange"
	DefaultDLQTopic  = "recentchange.dlq"
	// DefaultPartitions is the partition count of Topic when Run creates it.
	DefaultPartitions = 4
	// DefaultBatchMax events (topic + DLQ records, canaries included) end a
	// batch: one broker Append, one fsync.
	DefaultBatchMax = 1000
	// DefaultBatchDelay is the longest an event waits in a batch before it is
	// appended, so a slow stream still reaches the broker promptly.
	DefaultBatchDelay = 200 * time.Millisecond
	// DefaultMaxEventBytes: longer events go to the DLQ (untouched) instead
	// of the topic. Keep it below half the broker's MaxRecordBytes: SSE frames
	// up to twice this size are read, and an oversized event must still fit
	// into one DLQ record.
	DefaultMaxEventBytes = 256 << 10
	// DefaultRetryInitial and DefaultRetryMax bound the reconnect backoff
	// (x1.5 per failed attempt, +-50% jitter, reset after a connection that
	// delivered events).
	DefaultRetryInitial = 500 * time.Millisecond
	DefaultRetryMax     = 30 * time.Second
	// DefaultIdleTimeout drops a connection that delivered no bytes for this
	// long (a stalled TCP stream never errors by itself).
	DefaultIdleTimeout = 60 * time.Second
	// DefaultBatchMaxBytes of event data also end a batch, so one Append
	// stays small whatever the event size (1,000 events of 200 KB were one
	// 200 MB transaction).
	DefaultBatchMaxBytes = 8 << 20
	// DefaultMaxBufferedBytes bounds the event data received and not yet
	// appended (queued for validation, in batches, in the Append): reading
	// the stream waits while it is reached, so a fast source of large events
	// cannot fill memory. At least one event is always admitted.
	DefaultMaxBufferedBytes = 64 << 20
	// DefaultWorkers validate events in parallel (order is kept). Contract
	// validation is most of the CPU per event; BenchmarkIngest on the 2-core
	// machine was fastest with 4.
	DefaultWorkers = 4
)

// Header names on DLQ records.
const (
	HeaderReason    = "dlq.reason" // human-readable validation error
	HeaderSourceID  = "source.id"  // the SSE id (stream position) the event came with
	HeaderSourceURL = "source.url" // the stream URL
)

// Config configures Run. Zero fields take the Default* values.
type Config struct {
	// URL of the EventStreams endpoint (or a Replay server).
	URL string
	// UserAgent sent on every request.
	UserAgent string
	// Since asks for history from this time on a first start (no stored
	// resume position). Ignored when a position is stored. Zero: live.
	Since time.Time
	// Source names this stream in the resume-position meta key
	// "ingest/<Source>/last-event-id".
	Source     string
	Topic      string
	DLQTopic   string
	Partitions int // partitions of Topic when Run creates it; the DLQ has 1
	BatchMax   int
	BatchDelay time.Duration
	// BatchMaxBytes of event data end a batch (DefaultBatchMaxBytes).
	BatchMaxBytes int
	// MaxBufferedBytes bounds the event data in flight between the stream
	// and the broker (DefaultMaxBufferedBytes).
	MaxBufferedBytes int
	// MaxEventBytes: events with longer data go to the DLQ with reason
	// ErrOversized. A frame longer than twice this (plus 4 KiB) is cut and
	// what was read of it goes to the DLQ with reason ErrFrameTooLarge.
	MaxEventBytes int
	// MaxIDBytes bounds an SSE id taken as the stream position
	// (DefaultMaxIDBytes); a longer one, or one that is not a valid HTTP
	// header value, is never stored or sent: the event keeps the last good
	// position.
	MaxIDBytes   int
	RetryInitial time.Duration
	RetryMax     time.Duration
	// RetryAfterMax caps the wait a Retry-After on 429 or 503 asks for
	// (DefaultRetryAfterMax).
	RetryAfterMax time.Duration
	IdleTimeout   time.Duration
	// MaxEventAhead bounds event time by intake time: an event whose
	// timestamp is more than this ahead of its meta.dt, or whose meta.dt or
	// timestamp is more than this ahead of the broker's clock when it
	// arrives, goes to the DLQ (as do times before 2001). Silver applies the
	// same rule with its own setting: give both the same value.
	MaxEventAhead time.Duration
	Workers       int
	// HTTPTransport carries the stream requests. Default: a transport with
	// bounded dial/TLS/header timeouts and no proxy.
	HTTPTransport http.RoundTripper
	// Logger receives connection and batch events. Default: slog.Default().
	Logger *slog.Logger
	// Progress, if set, is called after every successful Append with the
	// current counters. It runs on the append path: keep it short.
	Progress func(Stats)
}

// MetaKey returns the broker meta key holding the resume position of source.
func MetaKey(source string) string { return "ingest/" + source + "/last-event-id" }

func (c *Config) fill() {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.Source == "" {
		c.Source = DefaultSource
	}
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.DLQTopic == "" {
		c.DLQTopic = DefaultDLQTopic
	}
	if c.Partitions <= 0 {
		c.Partitions = DefaultPartitions
	}
	if c.BatchMax <= 0 {
		c.BatchMax = DefaultBatchMax
	}
	if c.BatchDelay <= 0 {
		c.BatchDelay = DefaultBatchDelay
	}
	if c.BatchMaxBytes <= 0 {
		c.BatchMaxBytes = DefaultBatchMaxBytes
	}
	if c.MaxBufferedBytes <= 0 {
		c.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if c.MaxEventBytes <= 0 {
		c.MaxEventBytes = DefaultMaxEventBytes
	}
	if c.MaxIDBytes <= 0 {
		c.MaxIDBytes = DefaultMaxIDBytes
	}
	if c.RetryAfterMax <= 0 {
		c.RetryAfterMax = DefaultRetryAfterMax
	}
	if c.RetryInitial <= 0 {
		c.RetryInitial = DefaultRetryInitial
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxEventAhead <= 0 {
		c.MaxEventAhead = recentchange.DefaultMaxAhead
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.HTTPTransport == nil {
		c.HTTPTransport = newTransport()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Stats counts what an ingest has done since it started.
type Stats struct {
	Seen       int64  // events received from the source
	Appended   int64  // events appended to Topic
	DLQ        int64  // events appended to DLQTopic
	Canary     int64  // canary events skipped
	Batches    int64  // successful Appends
	Bytes      int64  // data bytes received
	Reconnects int64  // connection attempts after the first
	Oversized  int64  // SSE frames too large to read, cut and sent to the DLQ
	BadIDs     int64  // SSE ids refused as a position (not a header value, or too long)
	Position   string // last SSE id stored with a batch
	Connected  bool   // a stream response is open
	// LastError is why the last connection failed or ended (bounded text;
	// empty while connected): a refused reply, a Retry-After, a stored
	// position that cannot be sent.
	LastError string
	// Paused says why ingest is not reading the source ("" when it is):
	// the broker refuses appends for a while (a full disk, the disk
	// reserve), and ingest retries them with backoff.
	Paused string
}
