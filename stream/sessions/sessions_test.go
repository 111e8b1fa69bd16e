package sessions

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = time.Date(2026, 2, 26, 15, 0, 0, 0, time.UTC)

func at(hhmm string) int64 {
	d, err := time.ParseDuration(hhmm)
	if err != nil {
		panic(err)
	}
	return t0.Add(d).UnixMicro()
}

// timeline is the hand-built scenario of the golden test (gap 30m, delay
// 10m). The comments say what each batch is for.
var timeline = [][]edit{
	// 0: two editors named Alice (two wikis), a bot.
	{
		{Wiki: "enwiki", User: "Alice", Title: "A", At: at("0m"), Delta: 100},
		{Wiki: "enwiki", User: "Bot", Title: "A", At: at("0m"), Delta: 3, Bot: true},
		{Wiki: "dewiki", User: "Alice", Title: "X", At: at("5m"), Delta: 10},
		{Wiki: "enwiki", User: "Alice", Title: "B", At: at("10m"), Delta: -20},
	},
	// 1 (watermark 00:00): Alice continues after 25m (same session); Bot
	// after 31m (a new session).
	{
		{Wiki: "enwiki", User: "Alice", Title: "A", At: at("35m"), Delta: 5},
		{Wiki: "enwiki", User: "Bot", Title: "B", At: at("31m"), Delta: -3, Bot: true},
	},
	// 2 (watermark 00:25): Carol out of order, the third edit bridging the
	// first two; Dave stamped before the watermark (late).
	{
		{Wiki: "enwiki", User: "Carol", Title: "P", At: at("40m"), Delta: 1},
		{Wiki: "enwiki", User: "Carol", Title: "Q", At: at("1h30m"), Delta: -2},
		{Wiki: "enwiki", User: "Carol", Title: "P", At: at("1h5m"), Delta: 4},
		{Wiki: "enwiki", User: "Dave", Title: "Z", At: at("5m"), Delta: 9},
	},
	// 3 (watermark 01:20): Alice after 45m (a new session), exactly at the
	// watermark (on time). Closes Alice@dewiki, both Bot sessions and
	// Alice's first session.
	{
		{Wiki: "enwiki", User: "Alice", Title: "C", At: at("1h20m"), Delta: 7},
	},
	// 4 (watermark 01:20): a far-ahead edit moves event time on.
	{
		{Wiki: "frwiki", User: "Zed", Title: "Z", At: at("3h"), Delta: 1},
	},
	// 5 (watermark 02:50): closes Carol and Alice's second session; Zed
	// stays open.
	{
		{Wiki: "frwiki", User: "Zed", Title: "Z", At: at("3h1m"), Delta: 1},
	},
}

func TestSessionsGolden(t *testing.T) {
	h := newHarness(t, Config{SessionGap: 30 * time.Minute, WatermarkDelay: 10 * time.Minute})
	var buf bytes.Buffer
	for i, batch := range timeline {
		rows, late := h.run(h.p, -1, batch)
		meta, err := ParseMeta(h.meta[int64(i)])
		if err != nil {
			t.Fatal(err)
		}
		wm := "none"
		if !meta.Watermark.IsZero() {
			wm = meta.Watermark.Format("15:04")
		}
		fmt.Fprintf(&buf, "batch %d watermark %s late %d sessions %d\n", i, wm, late, len(rows))
		for _, r := range rows {
			fmt.Fprintf(&buf, "  %s %s/%s bot=%t %s-%s edits=%d pages=%d +%d -%d\n", r.ID, r.Wiki, r.User, r.Bot,
				r.Start.Format("15:04"), r.End.Format("15:04"), r.Edits, r.Pages, r.Added, r.Removed)
		}
	}
	fmt.Fprintf(&buf, "open sessions %d\n", h.p.OpenSessions())
	golden := filepath.Join("testdata", "sessions.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("sessions differ from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

// A re-run of each batch by a fresh processor from state N-1 produces the
// same sessions.
func TestSessionsReplayIsDeterministic(t *testing.T) {
	h := newHarness(t, Config{})
	for i, batch := range timeline {
		first, late := h.run(h.p, -1, batch)
		fresh := NewProcessor(Config{Logger: quietLogger()}, h.cp)
		again, late2 := h.run(fresh, int64(i), batch)
		if !slices.Equal(first, again) || late != late2 {
			t.Errorf("batch %d replay: got %v (late %d), want %v (late %d)", i, again, late2, first, late)
		}
		h.p = fresh
	}
}

func TestSessionIDDeterministic(t *testing.T) {
	a := sessionID("enwiki", "Alice", 1)
	if a != sessionID("enwiki", "Alice", 1) || a == sessionID("enwiki", "Alice", 2) ||
		a == sessionID("enwik", "iAlice", 1) || len(a) != 32 {
		t.Errorf("session ids: got %s", a)
	}
}
