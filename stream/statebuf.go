package stream

// MaxKeptStateBuffer is the largest state encoding buffer a processor keeps
// for its next SaveState. A full snapshot of a large state is megabytes
// (silver's dedup ids at 600 ev/s: about 6 MB), and keeping its buffer would
// hold that much for the whole run only to encode the small deltas of the
// batches after it into.
const MaxKeptStateBuffer = 64 << 10

// KeepStateBuffer returns the buffer a processor keeps after encoding its
// state into b: b itself while it is at most MaxKeptStateBuffer, else nil
// (the next encoding allocates). The bytes already returned to the runner
// stay valid either way.
func KeepStateBuffer(b []byte) []byte {
	if cap(b) > MaxKeptStateBuffer {
		return nil
	}
	return b
}
