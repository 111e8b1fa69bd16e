package stream

import "errors"

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrNoName: Config.Name is empty.
	ErrNoName = errors.New("stream: query has no name")
	// ErrNoCheckpointDir: neither Config.CheckpointDir nor Config.DataDir is set.
	ErrNoCheckpointDir = errors.New("stream: no checkpoint directory")
	// ErrCorruptCheckpoint: a checkpoint file exists but cannot be decoded,
	// or the logs contradict each other (a commit entry without its offset
	// entry, a gap in the offset log).
	ErrCorruptCheckpoint = errors.New("stream: corrupt checkpoint")
	// ErrNoEntry: the requested log entry or state version does not exist.
	ErrNoEntry = errors.New("stream: no such checkpoint entry")
	// ErrSourceBehind: the checkpoint or the table marker names offsets the
	// source no longer has (trimmed by retention) or never had.
	ErrSourceBehind = errors.New("stream: source cannot serve the recorded offsets")
	// ErrTableAhead: the checkpoint is behind the table in a way that cannot
	// be reconciled (the table holds batches the offset log never planned).
	ErrTableAhead = errors.New("stream: table holds batches the checkpoint does not know")
)
