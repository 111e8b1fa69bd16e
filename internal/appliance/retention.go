package appliance

import (
	"context"
	"syscall"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/stream"
)

// retentionEvery is how often the appliance applies broker retention.
const retentionEvery = 10 * time.Minute

// RetentionBytesAuto is --retention-bytes' default: a tenth of the size
// of the data directory's file system. The broker's records are what
// bronze has not landed yet, and the past that `reland` can replay; once
// bronze holds a record, the warehouse keeps it for good, so the broker's
// share is a buffer, not the lake: on a small disk a tenth still holds
// days of the real stream, and leaves the rest to the warehouse's growth.
const RetentionBytesAuto = -1

// RetentionBytesShare is the part of the file system RetentionBytesAuto
// gives the broker: 1/RetentionBytesShare.
const RetentionBytesShare = 10

// brokerRetentionBytes resolves --retention-bytes for the data directory:
// 0 (no size limit) when the file system's size cannot be had.
func (c *Config) brokerRetentionBytes() int64 {
	if c.RetentionBytes != RetentionBytesAuto {
		return c.RetentionBytes
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(c.Data, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize) / RetentionBytesShare
}

// startRetention starts the embedded broker's retention. A Kafka
// cluster's retention is its topics' own (retention.ms), which does not
// know what bronze has landed: docs/scale-out.md says how to set it.
func (a *Appliance) startRetention(start func(string, func(context.Context) error)) {
	if a.cfg.Retention <= 0 && a.cfg.RetentionBytes == 0 && a.cfg.DLQRetention <= 0 {
		return
	}
	db, ok := a.db.(*broker.DB)
	if !ok {
		a.log.Info("broker retention is the Kafka topics' own (retention.ms); --retention and --dlq-retention apply to the embedded broker only")
		return
	}
	start("retention", func(ctx context.Context) error { return a.runRetention(ctx, db) })
}

// runRetention applies retention at once (what is due after a restart is
// due now) and then every retentionEvery until ctx is done. A failed pass
// is logged and retried at the next tick; it never stops the appliance.
func (a *Appliance) runRetention(ctx context.Context, db *broker.DB) error {
	maxBytes := a.cfg.brokerRetentionBytes()
	if maxBytes > 0 {
		a.log.Info("broker retention by size", "topic", ingest.DefaultTopic, "max_bytes", maxBytes, "max_age", a.cfg.Retention)
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		t.Reset(retentionEvery)
		if a.cfg.Retention > 0 || maxBytes > 0 {
			n, err := stream.RetainBronze(ctx, db, a.lake, ingest.DefaultTopic, a.cfg.Retention, maxBytes, time.Now())
			a.logRetention(ingest.DefaultTopic, n, err, a.cfg.Retention)
		}
		if a.cfg.DLQRetention > 0 {
			n, err := stream.RetainDLQ(ctx, db, a.lake, ingest.DefaultDLQTopic, a.cfg.DLQRetention, time.Now())
			a.logRetention(ingest.DefaultDLQTopic, n, err, a.cfg.DLQRetention)
		}
	}
}

// logRetention logs one retention pass of topic (a failed pass is retried
// at the next tick).
func (a *Appliance) logRetention(topic string, removed int64, err error, maxAge time.Duration) {
	switch {
	case err != nil:
		a.log.Warn("broker retention failed", "topic", topic, "err", err)
	case removed > 0:
		a.log.Info("broker retention", "topic", topic, "removed", removed, "max_age", maxAge)
	}
}
