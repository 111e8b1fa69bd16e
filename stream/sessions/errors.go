package sessions

import (
	"errors"

	"lakehouse/stream"
)

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrCorruptState: a saved state version cannot be decoded (bad
	// checksum, truncated, or naming sessions its base does not hold), or a
	// delta chain is broken (a delta whose base version is missing).
	ErrCorruptState = errors.New("sessions: corrupt session state")
	// ErrBadMeta: a batch's offset-entry metadata cannot be decoded.
	ErrBadMeta = stream.ErrBadMeta
)
