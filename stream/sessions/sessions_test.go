package sessions

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
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
		fresh := NewProcessor(Config{Logger: slog.New(slog.DiscardHandler)})
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

// An editor active for ten hours, an edit every five minutes, gets
// sessions of at most the maximum (four hours): the same three whether the
// edits come in one batch, one per batch, or one per batch with every pair
// swapped (each second edit five minutes late, within the delay), and when
// every batch is re-run from state N-1 by a fresh processor.
func TestMaxSessionLengthSplits(t *testing.T) {
	cfg := Config{SessionGap: 30 * time.Minute, WatermarkDelay: 10 * time.Minute, MaxSessionLength: 4 * time.Hour}
	var edits []edit
	for m := 0; m <= 600; m += 5 {
		edits = append(edits, edit{Wiki: "wikidatawiki", User: "TirelessBot", Title: fmt.Sprintf("Q%d", m%50), Bot: true,
			At: t0.Add(time.Duration(m) * time.Minute).UnixMicro(), Delta: int64(m%7 - 3)})
	}
	flush := edit{Wiki: "enwiki", User: "Later", Title: "F", At: t0.Add(20 * time.Hour).UnixMicro(), Delta: 1}
	type span struct{ start, end string }
	want := []span{{"0s", "4h0m0s"}, {"4h5m0s", "8h5m0s"}, {"8h10m0s", "10h0m0s"}}

	swapped := slices.Clone(edits)
	for i := 0; i+1 < len(swapped); i += 2 {
		swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
	}
	one := func(es []edit) [][]edit {
		var out [][]edit
		for _, e := range es {
			out = append(out, []edit{e})
		}
		return out
	}
	var first []sessionRow
	for _, tc := range []struct {
		name    string
		batches [][]edit
		replay  bool
	}{
		{"one batch", [][]edit{edits}, false},
		{"one edit per batch", one(edits), false},
		{"pairs swapped", one(swapped), false},
		{"pairs swapped, each batch replayed", one(swapped), true},
	} {
		h := newHarness(t, cfg)
		var rows []sessionRow
		for i, b := range append(tc.batches, []edit{flush}, []edit{flush}) {
			got, _ := h.run(h.p, -1, b)
			if tc.replay {
				fresh := NewProcessor(Config{SessionGap: cfg.SessionGap, WatermarkDelay: cfg.WatermarkDelay,
					MaxSessionLength: cfg.MaxSessionLength, Logger: slog.New(slog.DiscardHandler)})
				if again, _ := h.run(fresh, int64(i), b); !slices.Equal(again, got) {
					t.Fatalf("%s: batch %d replayed from state %d: got %v, want %v", tc.name, i, i-1, again, got)
				}
				h.p = fresh
			}
			rows = append(rows, got...)
		}
		var spans []span
		var n int64
		for _, r := range rows {
			spans = append(spans, span{r.Start.Sub(t0).String(), r.End.Sub(t0).String()})
			n += r.Edits
			if r.End.Sub(r.Start) > cfg.MaxSessionLength {
				t.Errorf("%s: session %s lasts %s, over the maximum", tc.name, r.ID, r.End.Sub(r.Start))
			}
		}
		if !slices.Equal(spans, want) || n != int64(len(edits)) {
			t.Errorf("%s: sessions %v with %d edits, want %v with %d", tc.name, spans, n, want, len(edits))
		}
		if first == nil {
			first = rows
		} else if !slices.Equal(rows, first) {
			t.Errorf("%s: rows differ from one batch's:\ngot  %v\nwant %v", tc.name, rows, first)
		}
	}
}
