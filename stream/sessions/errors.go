package sessions

import (
	"errors"

	"lakehouse/stream"
)

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrCorruptState: a saved state version cannot be decoded.
	ErrCorruptState = errors.New("sessions: corrupt session state")
	// ErrBadMeta: a batch's offset-entry metadata cannot be decoded.
	ErrBadMeta = stream.ErrBadMeta
)
