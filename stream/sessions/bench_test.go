package sessions

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/stream"
)

// longSession returns the batches of one editor's single long session of n
// edits to distinct pages. extend: one edit per batch, a minute apart.
// bridge: two edits per batch, the first opening a new session 50 minutes
// after the long one (beyond the 30-minute gap), the second 25 minutes after
// it, bridging the two (a merge of a one-page session into the long one).
func longSession(n int, bridge bool) [][]edit {
	e := func(i int, at time.Duration) edit {
		return edit{Wiki: "enwiki", User: "Marathon", Title: fmt.Sprintf("Page %d", i), At: t0.Add(at).UnixMicro(), Delta: 1}
	}
	var out [][]edit
	if !bridge {
		for i := 0; i < n; i++ {
			out = append(out, []edit{e(i, time.Duration(i)*time.Minute)})
		}
		return out
	}
	out = append(out, []edit{e(0, 0)})
	for i := 1; i+1 < n; i += 2 {
		end := time.Duration(i/2) * 50 * time.Minute
		out = append(out, []edit{e(i, end+50*time.Minute), e(i+1, end+25*time.Minute)})
	}
	return out
}

// BenchmarkLongSession drives a processor as the runner does (PlanMeta,
// Process, SaveState; no durable write) through one editor's session of n
// edits (no maximum length). ns/edit stays flat as n grows when add is
// linear; save-ns/edit is the SaveState part, which grows with the session
// only through the full snapshot written every MaxDeltaChain batches;
// state-B/batch is the mean size SaveState returned. capped: the extend
// shape under the default maximum (4 h: sessions of 241 edits), where
// edits past the maximum are held back until the watermark passes them.
func BenchmarkLongSession(b *testing.B) {
	for _, shape := range []string{"extend", "bridge", "capped"} {
		for _, n := range []int{2500, 10000} {
			b.Run(fmt.Sprintf("%s/edits=%d", shape, n), func(b *testing.B) {
				cfg := Config{Logger: slog.New(slog.DiscardHandler), MaxSessionLength: -1}
				if shape == "capped" {
					cfg.MaxSessionLength = 0
				}
				benchLongSession(b, cfg, longSession(n, shape == "bridge"))
			})
		}
	}
}

func benchLongSession(b *testing.B, cfg Config, batches [][]edit) {
	ctx := context.Background()
	n := 0
	for _, es := range batches {
		n += len(es)
	}
	var elapsed, saving time.Duration
	var saved int64
	for i := 0; i < b.N; i++ {
		recs := make([]arrow.RecordBatch, len(batches))
		for j, es := range batches {
			recs[j] = silverRecord(b, es)
		}
		p := NewProcessor(cfg)
		start := time.Now()
		for j, rec := range recs {
			bt := stream.Batch{Query: QueryName, QueryID: "q", ID: int64(j)}
			meta, err := p.PlanMeta(ctx, bt)
			if err != nil {
				b.Fatal(err)
			}
			bt.Meta = meta
			out, err := p.Process(ctx, bt, []arrow.RecordBatch{rec})
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range out {
				r.Release()
			}
			t := time.Now()
			st, err := p.SaveState(ctx)
			saving += time.Since(t)
			if err != nil {
				b.Fatal(err)
			}
			saved += int64(len(st))
		}
		elapsed += time.Since(start)
		if got := p.OpenSessions(); got < 1 || got > 2 || (cfg.MaxSessionLength < 0 && got != 1) {
			b.Fatalf("open sessions: got %d, want 1 (or 2 after a split)", got)
		}
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*n), "ns/edit")
	b.ReportMetric(float64(saving.Nanoseconds())/float64(b.N*n), "save-ns/edit")
	b.ReportMetric(float64(saved)/float64(b.N*len(batches)), "state-B/batch")
}
