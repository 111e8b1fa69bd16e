package silver

import (
	"fmt"

	"lakehouse/stream"
)

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrCorruptState: a saved state version cannot be decoded, or a delta
	// chain is broken (a delta whose base version is missing). A query
	// with its lake rebuilds such a state from silver.edits; otherwise it
	// is a stream.ErrCorruptCheckpoint, whose error says how to recover.
	ErrCorruptState = fmt.Errorf("silver: corrupt dedup state: %w", stream.ErrCorruptCheckpoint)
	// ErrBadMeta: a batch's offset-entry metadata (its watermark) cannot be
	// decoded.
	ErrBadMeta = stream.ErrBadMeta
)
