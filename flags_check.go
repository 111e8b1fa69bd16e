package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"regexp"
	"time"
)

// maxPartitions bounds --partitions. Each partition is a bronze scan unit
// with its own offsets in every batch's marker and checkpoint, and more
// partitions than cores buy nothing on one machine: 20,000 spun two cores
// with no data and grew to 1 GB in 40 s. Kafka is the way past one machine.
const maxPartitions = 256

// duckMemory is a DuckDB memory_limit: a number and a unit.
var duckMemory = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)

// flagErrors collects the settings a command refuses, each naming its flag.
type flagErrors []error

func (e *flagErrors) add(name, format string, a ...any) {
	*e = append(*e, fmt.Errorf("--%s %s", name, fmt.Sprintf(format, a...)))
}

// err is nil when nothing was refused; otherwise every refusal, one per
// line, wrapping errUsage (exit status 2).
func (e flagErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	return usageError{errors.Join(e...)}
}

// usageError is a refusal of settings: its text is the refusals', and it
// matches errUsage.
type usageError struct{ error }

func (u usageError) Unwrap() []error { return []error{u.error, errUsage} }

func (e *flagErrors) positive(name string, d time.Duration) {
	if d <= 0 {
		e.add(name, "%s: want a positive duration", d)
	}
}

func (e *flagErrors) notNegative(name string, d time.Duration, zero string) {
	if d < 0 {
		e.add(name, "%s: want a positive duration, or 0 for %s", d, zero)
	}
}

// checkEventTime refuses event-time settings that would drop every event
// as late (or keep none on time): run, demo and verify share them.
func (e *flagErrors) checkEventTime(watermark, maxEventAhead time.Duration) {
	e.positive("watermark", watermark)
	e.positive("max-event-ahead", maxEventAhead)
}

// check refuses the pipeline settings that can never work, before anything
// is created on disk: a zero or negative value is an error unless its flag
// documents what it means. withSource is false for commands that make
// their own source (demo).
func (f *pipelineFlags) check(withSource bool) error {
	var e flagErrors
	if withSource && !f.noIngest && f.runs(roleIngest) {
		if u, err := url.Parse(f.source); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.add("source", "%q: want the http:// or https:// URL of an SSE stream", f.source)
		}
	}
	f.checkBroker(&e)
	f.checkRole(&e)
	if f.since != "" {
		if _, err := time.Parse(time.RFC3339, f.since); err != nil {
			e.add("since", "%q: want an RFC 3339 time such as 2026-11-30T12:00:00Z", f.since)
		}
	}
	if f.partitions < 1 || f.partitions > maxPartitions {
		e.add("partitions", "%d: want 1 to %d", f.partitions, maxPartitions)
	}
	if f.checkpointLoss != "rebuild" && f.checkpointLoss != "fresh" {
		e.add("checkpoint-loss", "%q: want rebuild or fresh", f.checkpointLoss)
	}
	e.positive("trigger", f.trigger)
	e.notNegative("downstream-trigger", f.downTrigger, "running as soon as the upstream table commits")
	e.notNegative("sessions-trigger", f.sessTrigger, "--downstream-trigger")
	if f.maxOffsets < 1 {
		e.add("max-offsets-per-trigger", "%d: want at least 1", f.maxOffsets)
	}
	if f.maxBytes == 0 {
		e.add("max-bytes-per-trigger", "0: want at least 1 (bytes), or negative for no byte cap")
	}
	e.checkEventTime(f.watermark, f.maxEventAhead)
	e.positive("session-gap", f.sessionGap)
	if f.sessionMax > 0 && f.sessionMax <= f.watermark {
		e.add("session-max", "%s: must exceed --watermark (%s), or be 0 or off for no maximum", f.sessionMax, f.watermark)
	}
	e.notNegative("refresh", f.refresh, "no marts")
	e.notNegative("retention", f.retention, "keeping every record")
	if f.retentionBytes < retentionBytesAuto {
		e.add("retention-bytes", "%d: want a number of bytes, 0 for no size limit, or -1 for a tenth of the file system", f.retentionBytes)
	}
	e.notNegative("dlq-retention", f.dlqRetention, "keeping every dead letter")
	e.notNegative("ops-retention", f.opsRetention, "keeping every ops row")
	if f.diskReserve < 0 {
		e.add("disk-reserve", "%d: want a number of bytes, or 0 for no reserve", f.diskReserve)
	}
	if f.httpBounds.MaxConns < 0 {
		e.add("http-max-conns", "%d: want at least 1, or 0 for a quarter of the open-file limit", f.httpBounds.MaxConns)
	}
	if f.maxSnapshots < 1 {
		e.add("max-snapshots", "%d: want at least 1", f.maxSnapshots)
	}
	if f.martsMemory != "" && !duckMemory.MatchString(f.martsMemory) {
		e.add("marts-memory", "%q: want a size such as 64MB or 1GB", f.martsMemory)
	}
	if f.keepSnapshots < 1 || f.keepSnapshots > f.maxSnapshots {
		e.add("keep-snapshots", "%d: want 1 to --max-snapshots (%d)", f.keepSnapshots, f.maxSnapshots)
	}
	return e.err()
}

// setDefault changes a registered flag's value and the default its help
// shows, for commands that run with other defaults than `run` (demo).
func setDefault(fs *flag.FlagSet, name, value string) {
	if err := fs.Set(name, value); err != nil {
		panic(fmt.Sprintf("default of --%s: %v", name, err)) // a constant of this program
	}
	fs.Lookup(name).DefValue = value
}
