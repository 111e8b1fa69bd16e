package marts

import (
	"context"
	"io"
	"testing"

	"lakehouse/table"
)

// benchLake holds 20,000 silver edits (10 batches) and 100 sessions.
func benchLake(b *testing.B) *table.Lake {
	lake := openTestLake(b, b.TempDir())
	for batch := int64(0); batch < 10; batch++ {
		commit(b, lake, table.SilverEdits, "silver", batch, table.SilverEditsSchema, streamBatch(batch, 2000))
	}
	var ss []row
	for i := 0; i < 100; i++ {
		ss = append(ss, session("s"+string(rune('a'+i%26))+string(rune('a'+i/26)), "enwiki", "U", i%4 == 0, i, i*7, int64(i%9+1), 1, 10, 0))
	}
	commit(b, lake, table.EditorSessions, "sessions", 0, table.EditorSessionsSchema, ss)
	return lake
}

// BenchmarkRefresh: rebuild and write the four marts, run and record the
// checks, over 20,000 silver edits.
func BenchmarkRefresh(b *testing.B) {
	lake := benchLake(b)
	m := New(lake, fakeLog{}, Config{Logger: quietLogger()})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "silver_rows/s")
}

// BenchmarkQuery: an aggregate over 20,000 silver edits, printed as a table.
func BenchmarkQuery(b *testing.B) {
	lake := benchLake(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := Query(ctx, lake, `SELECT wiki, title, count(*) AS n FROM silver.edits GROUP BY ALL ORDER BY n DESC`, FormatTable, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
