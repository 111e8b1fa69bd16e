package ingest

import (
	"context"
	"sync"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest/replay"
)

// gatedLog holds every Append until open is closed, and records the data
// bytes of each Append.
type gatedLog struct {
	broker.Log
	open chan struct{}

	mu    sync.Mutex
	sizes []int
}

func (g *gatedLog) Append(ctx context.Context, b broker.Batch) ([]broker.Position, error) {
	<-g.open
	n := 0
	for _, r := range b.Records {
		n += len(r.Value)
	}
	g.mu.Lock()
	g.sizes = append(g.sizes, n)
	g.mu.Unlock()
	return g.Log.Append(ctx, b)
}

// TestIngestBoundedInBytes: with large events, what ingest holds between
// the stream and the broker stays within MaxBufferedBytes (reading waits
// while the broker does not take them: here it takes nothing until let go),
// and each Append stays within BatchMaxBytes plus one event; once let go,
// every event lands.
func TestIngestBoundedInBytes(t *testing.T) {
	const events, size = 60, 100_000
	r, url := startReplay(t, replay.Config{Seed: 71})
	r.Loops(replay.Generate(71, events).Padded(size), 1)
	log := &gatedLog{Log: tempBroker(t), open: make(chan struct{})}
	cfg := Config{URL: url, MaxBufferedBytes: 1 << 20, BatchMaxBytes: 300_000}
	in, stop := runIngest(t, log, cfg)
	waitFor(t, 30*time.Second, "the first events", func() bool { return in.Stats().Seen > 0 })
	time.Sleep(500 * time.Millisecond) // time to read far more, were it not bounded
	held := in.Stats().Seen
	if most := int64(cfg.MaxBufferedBytes/size + 1); held > most {
		t.Errorf("with the broker not appending, %d events of %d bytes were read; want at most %d (%d bytes buffered)", held, size, most, cfg.MaxBufferedBytes)
	}
	close(log.open)
	waitFor(t, 30*time.Second, "every event", func() bool { return in.Stats().Appended == events })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for i, n := range log.sizes {
		if n > cfg.BatchMaxBytes+size+1000 {
			t.Errorf("append %d: %d bytes of events, want at most %d plus one event", i, n, cfg.BatchMaxBytes)
		}
	}
	if len(log.sizes) < events*size/(cfg.BatchMaxBytes+size) {
		t.Errorf("%d appends for %d bytes, want batches of about %d bytes", len(log.sizes), events*size, cfg.BatchMaxBytes)
	}
}
