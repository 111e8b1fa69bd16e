package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrBadMeta: a batch's offset-entry metadata cannot be decoded.
var ErrBadMeta = errors.New("stream: bad batch metadata")

// NoTime marks "no event seen" / "no watermark yet" in Unix microseconds.
const NoTime = math.MinInt64

// EventTimeMeta is what an event-time query (silver, sessions) fixes in a
// batch's offset entry before the batch runs (see MetaPlanner), so that a
// re-run of the batch computes the same rows.
type EventTimeMeta struct {
	// Watermark is the batch's watermark (zero: none yet, nothing is late).
	Watermark time.Time `json:"watermark,omitzero"`
	// Planned is when the batch was planned; it stamps processed_time.
	Planned time.Time `json:"planned"`
}

// ParseEventTimeMeta decodes a batch's metadata; it wraps ErrBadMeta.
func ParseEventTimeMeta(raw json.RawMessage) (EventTimeMeta, error) {
	var m EventTimeMeta
	if len(raw) == 0 {
		return m, fmt.Errorf("decode batch meta: %w: empty", ErrBadMeta)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("decode batch meta: %w: %v", ErrBadMeta, err)
	}
	return m, nil
}

// WatermarkMicros is the watermark in Unix microseconds, or NoTime.
func (m EventTimeMeta) WatermarkMicros() int64 {
	if m.Watermark.IsZero() {
		return NoTime
	}
	return m.Watermark.UnixMicro()
}

// MicrosTime turns Unix microseconds (or NoTime) back into a time.
func MicrosTime(us int64) time.Time {
	if us == NoTime {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// NextWatermark is the watermark a batch uses: the newest event time of the
// batches before it minus delay, never below the previous watermark. All
// times are Unix microseconds; NoTime means none. The subtraction saturates
// instead of wrapping around (silver's event times are bounded anyway:
// recentchange.CheckTimes).
func NextWatermark(prev, maxEvent int64, delay time.Duration) int64 {
	if maxEvent == NoTime {
		return prev
	}
	d := delay.Microseconds()
	switch {
	case d > 0 && maxEvent < math.MinInt64+d:
		return prev // below every time: no watermark from it
	case d < 0 && maxEvent > math.MaxInt64+d:
		return math.MaxInt64
	}
	return max(prev, maxEvent-d)
}

// PlanEventTimeMeta encodes the metadata of the next batch of an event-time
// query: NextWatermark of the state before it, and planned time now.
func PlanEventTimeMeta(prevWatermark, maxEvent int64, delay time.Duration, now time.Time) (json.RawMessage, error) {
	wm := NextWatermark(prevWatermark, maxEvent, delay)
	raw, err := json.Marshal(EventTimeMeta{Watermark: MicrosTime(wm), Planned: now.UTC()})
	if err != nil {
		return nil, fmt.Errorf("encode batch meta: %w", err)
	}
	return raw, nil
}
