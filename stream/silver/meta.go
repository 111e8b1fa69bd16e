package silver

import (
	"encoding/json"
	"fmt"
	"time"
)

// Meta is what silver fixes in a batch's offset entry before the batch runs,
// so that a re-run computes the same rows.
type Meta struct {
	// Watermark is the batch's watermark (zero: none yet, nothing is late).
	Watermark time.Time `json:"watermark,omitzero"`
	// Planned is when the batch was planned; it stamps processed_time.
	Planned time.Time `json:"planned"`
}

// ParseMeta decodes a batch's metadata.
func ParseMeta(raw json.RawMessage) (Meta, error) {
	var m Meta
	if len(raw) == 0 {
		return m, fmt.Errorf("decode batch meta: %w: empty", ErrBadMeta)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("decode batch meta: %w: %v", ErrBadMeta, err)
	}
	return m, nil
}

func (m Meta) watermarkMicros() int64 {
	if m.Watermark.IsZero() {
		return noTime
	}
	return m.Watermark.UnixMicro()
}

func microsTime(us int64) time.Time {
	if us == noTime {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
