package marts

import (
	"context"
	"log/slog"

	"errors"
	"github.com/apache/arrow-go/v18/arrow"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// TestFreshnessCheckParsesTheNewestRows: when appends came denser than the
// stream (ingest catching up, a lake the demo built), every bronze row may
// lie within the freshness window of broker time; the check then parses
// only the newest freshRows offsets of each partition, and still finds the
// newest edit. It does so from bronze's marker (the newest offsets read
// from the lake's metadata, not by scanning bronze) and, where the marker
// names no offsets, by reading them from bronze.
func TestFreshnessCheckParsesTheNewestRows(t *testing.T) {
	ctx := context.Background()
	newest := t0.Truncate(time.Hour)
	const perPartition = 100
	for _, tc := range []struct {
		rows   int64
		want   int64  // edit events parsed
		marker string // bronze's marker offsets
	}{{10, 20, "0"}, {1000, 2 * perPartition, "0"}, {10, 20, `{"0":100,"1":100}`}, {1000, 2 * perPartition, `{"0":100,"1":100}`},
		// A partition's marker behind its files (read before they were
		// planned): still every partition's newest rows.
		{10, 30, `{"0":95,"1":100}`}} {
		lake := openTestLake(t, t.TempDir())
		commit(t, lake, table.SilverEdits, "silver", 1, table.SilverEditsSchema,
			[]row{edit("e-newest", newest, "enwiki", "edit", "P", "U", false, 1)})
		var bronze []row
		for p := range int32(2) {
			for off := range int64(perPartition) {
				// one a second, the newest (offset 99) at newest: all within the window
				bronze = append(bronze, bronzeRow(p, off, "edit", newest.Add(-time.Duration(perPartition-1-off)*time.Second)))
			}
		}
		rec := recordOf(t, table.BronzeSchema, bronze)
		_, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: 0, Offsets: tc.marker, Records: []arrow.RecordBatch{rec}})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		log := &fakeLog{offsets: []broker.PartitionOffsets{{Partition: 0, Start: 0, End: perPartition}, {Partition: 1, Start: 0, End: perPartition}}}
		m := newMarts(lake, log, Config{Logger: slog.New(slog.DiscardHandler), freshRows: tc.rows})
		if _, fromMarker := m.readBronzeFloor(ctx); fromMarker != (tc.marker != "0") {
			t.Fatalf("inconclusive: marker %s read as usable %v", tc.marker, fromMarker)
		}
		rep, err := m.Refresh(ctx)
		if err != nil && !errors.Is(err, ErrChecksFailed) {
			t.Fatal(err)
		}
		var c *Check
		for i := range rep.Checks {
			if rep.Checks[i].Name == CheckSilverFresh {
				c = &rep.Checks[i]
			}
		}
		if c == nil {
			t.Fatalf("no %s among %v", CheckSilverFresh, rep.Checks)
		}
		if got := c.Numbers["bronze_recent_edit_events"]; got != tc.want {
			t.Errorf("freshRows %d, marker %s: parsed %d edit events, want %d: %s", tc.rows, tc.marker, got, tc.want, c.Message)
		}
		if !c.Passed || c.Numbers["bronze_newest_unix"] != newest.Unix() {
			t.Errorf("freshRows %d, marker %s: the newest edit was not found: %v", tc.rows, tc.marker, c)
		}
	}
}
