package ingest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
)

// Example runs the demo wiring: a replay server on loopback playing
// generated events (with a few contract violations and canaries mixed in),
// and the ingest writing them into a broker.
func Example() {
	dir, _ := os.MkdirTemp("", "ingest-example")
	defer os.RemoveAll(dir)
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	source, url, err := replay.Demo("127.0.0.1:0", 1, 2000, 1, 0, 0)
	if err != nil {
		panic(err)
	}
	defer source.Close()

	ctx, cancel := context.WithCancel(context.Background())
	in, _ := ingest.New(db, ingest.Config{URL: url, Source: "demo", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	want := int64(source.Len())
	for s := in.Stats(); s.Appended+s.DLQ+s.Canary < want; s = in.Stats() {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}

	s := in.Stats()
	topics, _ := db.Topics(context.Background())
	fmt.Printf("appended %d, dead-lettered %d, canaries skipped %d\n", s.Appended, s.DLQ, s.Canary)
	for _, t := range topics {
		fmt.Printf("%s: %d partitions, %d messages\n", t.Name, len(t.Partitions), t.Messages())
	}
	// Output:
	// appended 2000, dead-lettered 4, canaries skipped 2
	// recentchange: 4 partitions, 2000 messages
	// recentchange.dlq: 1 partitions, 4 messages
}
