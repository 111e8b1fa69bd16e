package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"lakehouse/broker"
)

// ErrBadPosition: a resume position that cannot be sent as Last-Event-ID (a
// control character, blanks at either end, longer than MaxIDBytes).
var ErrBadPosition = errors.New("ingest: invalid resume position")

// SinceKey returns the broker meta key holding the time a reset asked the
// next start of source to read from (RFC 3339). It is honoured only while no
// resume position is stored, like Config.Since, and takes precedence over it.
func SinceKey(source string) string { return "ingest/" + source + "/since" }

// Reset says where ResetPosition puts a source's resume position. Exactly
// one field is set.
type Reset struct {
	// To is an SSE id to resume after (as if its event had just been
	// stored); it must be a valid position (see Config.MaxIDBytes).
	To string
	// Since clears the position: the next start reads from this time (the
	// source's `since` parameter).
	Since time.Time
	// Latest clears the position: the next start reads from the live end
	// (or from Config.Since, when the appliance is given one).
	Latest bool
}

// ResetPosition stores r as the resume position of source in one broker
// transaction (the position and the since key together, so a later start
// never sees one without the other) and returns the position it replaced.
// The ingester must not be running (the appliance holds the broker's file
// lock while it runs). Fails with ErrBadPosition if r.To is not a valid
// position, and with an error if r sets no field or more than one.
func ResetPosition(ctx context.Context, log broker.Log, source string, r Reset) (string, error) {
	set := 0
	for _, b := range []bool{r.To != "", !r.Since.IsZero(), r.Latest} {
		if b {
			set++
		}
	}
	if set != 1 {
		return "", errors.New("reset position: want exactly one of a position, a time, or latest")
	}
	if r.To != "" {
		if reason := badIDReason(r.To, DefaultMaxIDBytes); reason != "" {
			return "", fmt.Errorf("reset position: %q is %s: %w", r.To[:min(len(r.To), 64)], reason, ErrBadPosition)
		}
	}
	old, err := log.Meta(ctx, MetaKey(source))
	if err != nil {
		return "", fmt.Errorf("reset position: read it: %w", err)
	}
	since := ""
	if !r.Since.IsZero() {
		since = r.Since.UTC().Format(time.RFC3339Nano)
	}
	if _, err := log.Append(ctx, broker.Batch{Meta: []broker.Meta{
		{Key: MetaKey(source), Value: []byte(r.To)},
		{Key: SinceKey(source), Value: []byte(since)},
	}}); err != nil {
		return "", fmt.Errorf("reset position: write it: %w", err)
	}
	return string(old), nil
}

// resumePosition reads the stored position and, when it is empty, the time
// a reset asked to start from (zero when none).
func (in *Ingester) resumePosition(ctx context.Context) (string, time.Time, error) {
	pos, err := in.log.Meta(ctx, MetaKey(in.cfg.Source))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read resume position: %w", err)
	}
	if len(pos) > 0 {
		return string(pos), time.Time{}, nil
	}
	s, err := in.log.Meta(ctx, SinceKey(in.cfg.Source))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read resume time: %w", err)
	}
	if len(s) == 0 {
		return "", time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		in.cfg.Logger.Warn("ingest: stored resume time unreadable, ignored", "source", in.cfg.Source, "value", string(s[:min(len(s), 64)]))
		return "", time.Time{}, nil
	}
	return "", t, nil
}
