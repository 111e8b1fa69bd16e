package ingest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest/replay"
)

func openBroker(t testing.TB, path string) *broker.DB {
	t.Helper()
	db, err := broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatalf("open broker: %v", err)
	}
	return db
}

func tempBroker(t testing.TB) *broker.DB {
	t.Helper()
	db := openBroker(t, filepath.Join(t.TempDir(), "broker.db"))
	t.Cleanup(func() { db.Close() })
	return db
}

// readTopic returns every stored message of topic, partition by partition.
func readTopic(t testing.TB, log broker.Log, topic string) []broker.Message {
	t.Helper()
	ctx := context.Background()
	offs, err := log.Offsets(ctx, topic)
	if err != nil {
		t.Fatalf("offsets %s: %v", topic, err)
	}
	var out []broker.Message
	for _, p := range offs {
		for from := p.Start; from < p.End; {
			ms, err := log.Read(ctx, topic, p.Partition, from, 10_000)
			if err != nil {
				t.Fatalf("read %s/%d@%d: %v", topic, p.Partition, from, err)
			}
			if len(ms) == 0 {
				break
			}
			out = append(out, ms...)
			from = ms[len(ms)-1].Offset + 1
		}
	}
	return out
}

// keyCounts counts stored messages per key (meta.id).
func keyCounts(ms []broker.Message) map[string]int {
	c := make(map[string]int, len(ms))
	for _, m := range ms {
		c[string(m.Key)]++
	}
	return c
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runIngest starts Run in a goroutine and returns a stop function that
// cancels it and returns Run's error.
func runIngest(t testing.TB, log broker.Log, cfg Config) (*Ingester, func() error) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	in, err := New(log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	stopped := false
	var runErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return within 30 s of cancel")
			}
		}
		return runErr
	}
	t.Cleanup(func() { stop() })
	return in, stop
}

// startReplay starts a replay server on loopback for the test.
func startReplay(t *testing.T, cfg replay.Config) (*replay.Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := replay.New(cfg)
	url, err := r.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, url
}
