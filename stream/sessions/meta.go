package sessions

import (
	"encoding/json"

	"lakehouse/stream"
)

// Meta is what sessions fixes in a batch's offset entry before the batch runs:
// its watermark and planned time (stream.EventTimeMeta).
type Meta = stream.EventTimeMeta

// ParseMeta decodes a batch's metadata; errors wrap ErrBadMeta.
func ParseMeta(raw json.RawMessage) (Meta, error) { return stream.ParseEventTimeMeta(raw) }

// noTime marks "no event seen" / "no watermark yet" (Unix microseconds).
const noTime = stream.NoTime
