package sessions

import (
	"fmt"

	"lakehouse/stream"
)

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrCorruptState: a saved state version cannot be decoded (bad
	// checksum, truncated, or naming sessions its base does not hold), or a
	// delta chain is broken (a delta whose base version is missing). It is
	// a stream.ErrCorruptCheckpoint, so the query's error says how to
	// recover (move the checkpoint away: sessions restarts from its
	// table's marker with no open sessions).
	ErrCorruptState = fmt.Errorf("sessions: corrupt session state: %w", stream.ErrCorruptCheckpoint)
	// ErrBadMeta: a batch's offset-entry metadata cannot be decoded.
	ErrBadMeta = stream.ErrBadMeta
)
