package appliance

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// A Problem is a setting that can never work. Setting is its name (the run
// command's flag names the settings), Why what is wrong with its value.
type Problem struct{ Setting, Why string }

// Problems are the settings Check refuses, in the order it checked them.
type Problems []Problem

// Add records that setting is refused, with why in fmt.Sprintf's form.
func (e *Problems) Add(setting, format string, a ...any) {
	*e = append(*e, Problem{Setting: setting, Why: fmt.Sprintf(format, a...)})
}

// Positive refuses a duration that is not positive.
func (e *Problems) Positive(setting string, d time.Duration) {
	if d <= 0 {
		e.Add(setting, "%s: want a positive duration", d)
	}
}

// NotNegative refuses a negative duration; zero means what zero says.
func (e *Problems) NotNegative(setting string, d time.Duration, zero string) {
	if d < 0 {
		e.Add(setting, "%s: want a positive duration, or 0 for %s", d, zero)
	}
}

// EventTime refuses event-time settings that would drop every event as
// late (or keep none on time): the appliance and verify share them.
func (e *Problems) EventTime(watermark, maxEventAhead time.Duration) {
	e.Positive("watermark", watermark)
	e.Positive("max-event-ahead", maxEventAhead)
}

// maxPartitions bounds Partitions. Each partition is a bronze scan unit
// with its own offsets in every batch's marker and checkpoint, and more
// partitions than cores buy nothing on one machine: 20,000 spun two cores
// with no data and grew to 1 GB in 40 s. Kafka is the way past one machine.
const maxPartitions = 256

// duckMemory is a DuckDB memory_limit: a number and a unit.
var duckMemory = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)

// Check refuses the settings that can never work, before anything is
// created on disk: a zero or negative value is refused unless its setting
// documents what it means. withSource is false for a caller that makes
// its own source (the demo).
func (c *Config) Check(withSource bool) Problems {
	var e Problems
	if withSource && !c.NoIngest && c.Runs(RoleIngest) {
		if u, err := url.Parse(c.Source); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.Add("source", "%q: want the http:// or https:// URL of an SSE stream", c.Source)
		}
	}
	c.checkBroker(&e)
	c.checkRole(&e)
	if c.Since != "" {
		if _, err := time.Parse(time.RFC3339, c.Since); err != nil {
			e.Add("since", "%q: want an RFC 3339 time such as 2026-11-30T12:00:00Z", c.Since)
		}
	}
	if c.Partitions < 1 || c.Partitions > maxPartitions {
		e.Add("partitions", "%d: want 1 to %d", c.Partitions, maxPartitions)
	}
	if c.CheckpointLoss != "rebuild" && c.CheckpointLoss != "fresh" {
		e.Add("checkpoint-loss", "%q: want rebuild or fresh", c.CheckpointLoss)
	}
	e.Positive("trigger", c.Trigger)
	e.NotNegative("downstream-trigger", c.DownstreamTrigger, "running as soon as the upstream table commits")
	e.NotNegative("sessions-trigger", c.SessionsTrigger, "--downstream-trigger")
	if c.MaxOffsetsPerTrigger < 1 {
		e.Add("max-offsets-per-trigger", "%d: want at least 1", c.MaxOffsetsPerTrigger)
	}
	if c.MaxBytesPerTrigger == 0 {
		e.Add("max-bytes-per-trigger", "0: want at least 1 (bytes), or negative for no byte cap")
	}
	e.EventTime(c.Watermark, c.MaxEventAhead)
	e.Positive("session-gap", c.SessionGap)
	if c.SessionMax > 0 && c.SessionMax <= c.Watermark {
		e.Add("session-max", "%s: must exceed --watermark (%s), or be 0 or off for no maximum", c.SessionMax, c.Watermark)
	}
	e.NotNegative("refresh", c.Refresh, "no marts")
	e.NotNegative("retention", c.Retention, "keeping every record")
	if c.RetentionBytes < RetentionBytesAuto {
		e.Add("retention-bytes", "%d: want a number of bytes, 0 for no size limit, or -1 for a tenth of the file system", c.RetentionBytes)
	}
	e.NotNegative("dlq-retention", c.DLQRetention, "keeping every dead letter")
	e.NotNegative("ops-retention", c.OpsRetention, "keeping every ops row")
	if c.DiskReserve < 0 {
		e.Add("disk-reserve", "%d: want a number of bytes, or 0 for no reserve", c.DiskReserve)
	}
	if c.HTTPBounds.MaxConns < 0 {
		e.Add("http-max-conns", "%d: want at least 1, or 0 for a quarter of the open-file limit", c.HTTPBounds.MaxConns)
	}
	if c.MaxSnapshots < 1 {
		e.Add("max-snapshots", "%d: want at least 1", c.MaxSnapshots)
	}
	if c.MartsMemory != "" && !duckMemory.MatchString(c.MartsMemory) {
		e.Add("marts-memory", "%q: want a size such as 64MB or 1GB", c.MartsMemory)
	}
	if c.Models != "" {
		if fi, err := os.Stat(c.Models); err != nil {
			e.Add("models", "%v", err)
		} else if !fi.IsDir() {
			e.Add("models", "%s: not a directory (the models are its *.sql files)", c.Models)
		}
	}
	if c.KeepSnapshots < 1 || c.KeepSnapshots > c.MaxSnapshots {
		e.Add("keep-snapshots", "%d: want 1 to --max-snapshots (%d)", c.KeepSnapshots, c.MaxSnapshots)
	}
	return e
}

// checkRole checks Role and what a split role needs: a broker and tables
// other processes can share.
func (c *Config) checkRole(e *Problems) {
	switch c.Role {
	case "", RoleAll:
		return
	case RoleIngest, RoleStream, RoleMarts:
	default:
		e.Add("role", "%q: want one of %s", c.Role, strings.Join(Roles, ", "))
		return
	}
	if !c.Kafka() {
		e.Add("role", "%s: the roles share a broker, and the embedded broker.db is one process's: run them over Kafka with --broker kafka://host:port", c.Role)
	}
	if c.Role != RoleIngest && c.Catalog == "" {
		e.Add("role", "%s: the stream and marts roles share the tables through an Iceberg REST catalog (--catalog rest+http://...); catalog.db is one data directory's", c.Role)
	}
	if c.Role != RoleIngest && c.NoIngest {
		e.Add("no-ingest", "with --role %s: only --role all runs ingest; drop --no-ingest", c.Role)
	}
}
