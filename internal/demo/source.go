package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
)

// startSource starts the demo's replay server (f.Source becomes its
// address) and says what it plays.
func startSource(f *appliance.Config, stdout io.Writer, events, loops int, rate float64, span time.Duration) (*replay.Server, error) {
	src, url, err := replay.Demo("127.0.0.1:0", 1, events, loops, rate, span)
	if err != nil {
		return nil, fmt.Errorf("start replay server: %w", err)
	}
	counts := src.Counts()
	f.Source = url
	fmt.Fprintf(stdout, "demo: replaying %d events (%d loops of %d, plus %d contract violations and %d canaries) from %s\n",
		counts.Events, counts.Loops, events, counts.Violations, counts.Canaries, url)
	if span > 0 {
		fmt.Fprintf(stdout, "demo: event times spread over the last %s, in order, the newest now: none late; sessions that ended before the last %s (gap + watermark) close\n",
			span, f.SessionGap+f.Watermark)
	}
	return src, nil
}

// nextEdit is one generated edit (silver keeps it, so sessions runs a
// batch for it), to be stamped when it is sent.
func nextEdit() replay.Recording {
	rec := replay.Generate(2, 50)
	for _, ev := range rec.Events {
		var m struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(ev, &m) == nil && m.Type == "edit" {
			return replay.Recording{Events: [][]byte{ev}}
		}
	}
	panic("no edit among 50 generated events")
}
