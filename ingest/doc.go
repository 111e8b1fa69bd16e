// Package ingest owns the hop from Wikimedia EventStreams to the broker: an
// SSE client (github.com/tmaxmax/go-sse) that reconnects with backoff and
// resumes with Last-Event-ID, the event contract (the upstream
// mediawiki/recentchange schema plus the project's stricter rules, embedded
// and checked with github.com/santhosh-tekuri/jsonschema/v6, then the rules
// JSON Schema cannot state, shared with silver through internal/recentchange:
// whatever the contract accepts, silver stores), routing of contract
// violations, non-JSON and oversized data to a dead-letter topic, and the
// durable resume position. Most valid events are passed by one pass over
// their bytes (contract_pass.go: the schema compiled into plans, with the
// other rules in the same pass); every other event is decoded and checked
// by the library, whose verdict and text are the DLQ reason.
//
// Event time is data, not truth: an event whose timestamp is more than
// Config.MaxEventAhead ahead of its meta.dt, whose meta.dt is more than that
// ahead of the broker's clock when it arrives, or whose times are before
// 2001, is a contract violation and goes to the DLQ with the rule's reason,
// so a bad clock upstream can never move a watermark downstream. The replay
// SSE server and event generator that the demo, the tests and the
// benchmarks use are the sub-package ingest/replay.
//
// What survives a crash: every Append to the broker carries a batch of
// events and, in the same transaction, the SSE id of the batch's last event
// under the meta key "ingest/<source>/last-event-id". After a crash the
// stored position is therefore never ahead of the stored events, and a
// restart resumes at it: nothing is lost. Events received but not yet
// appended are read again after the restart. Because the source resumes
// "at or before" the position (several events share one id), some events
// can be stored twice: the guarantee of this hop is at-least-once, and
// duplicates of meta.id come only from the resume window (silver removes
// them).
//
// When the broker refuses a batch transiently (a full disk, its disk
// reserve), ingest retries that batch with backoff and, with its buffer
// full, stops reading the source meanwhile: back-pressure, not loss
// (Stats.Paused says so). Stopped during such a pause, it leaves the stored
// position where the stored events end.
package ingest
