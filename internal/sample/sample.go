// Package sample holds the 50 real recentchange events captured from the
// live Wikimedia stream on 2026-02-26, one JSON line each: the one copy the
// replay generator (and so the demo, bench and prove) and every test read.
// It holds data only and survives nothing.
package sample

import (
	"bytes"
	_ "embed"
)

//go:embed recentchange-sample-50.jsonl
var jsonl []byte

// JSONL returns the recording as the file holds it (a copy).
func JSONL() []byte { return bytes.Clone(jsonl) }

// Events returns the events, one per non-blank line, without the line
// ending; each is memory of its own.
func Events() [][]byte {
	var out [][]byte
	for line := range bytes.Lines(jsonl) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, bytes.Clone(line))
		}
	}
	return out
}
