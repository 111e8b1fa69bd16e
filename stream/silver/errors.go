package silver

import (
	"errors"

	"lakehouse/stream"
)

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrCorruptState: a saved state version cannot be decoded, or a delta
	// chain is broken (a delta whose base version is missing).
	ErrCorruptState = errors.New("silver: corrupt dedup state")
	// ErrBadMeta: a batch's offset-entry metadata (its watermark) cannot be
	// decoded.
	ErrBadMeta = stream.ErrBadMeta
)
