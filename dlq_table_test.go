package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/table"
)

// TestDLQHeadersAreIngests: the dead-letter table's header columns read the
// headers ingest writes.
func TestDLQHeadersAreIngests(t *testing.T) {
	want := map[string]string{"reason": ingest.HeaderReason, "source_id": ingest.HeaderSourceID, "source_url": ingest.HeaderSourceURL}
	if fmt.Sprint(stream.DLQHeaders) != fmt.Sprint(want) || stream.DLQTopic != ingest.DefaultDLQTopic {
		t.Errorf("stream.DLQHeaders %v on %s, want %v on %s", stream.DLQHeaders, stream.DLQTopic, want, ingest.DefaultDLQTopic)
	}
}

// checkDLQTable fails t unless bronze.recentchange_dlq holds every message
// of the dead-letter topic exactly once: its offset, its bytes untouched
// (invalid UTF-8 too), its reason and source position as ingest wrote
// them in the headers; `query` reads it.
func checkDLQTable(t *testing.T, a *testAppliance, msgs []broker.Message) {
	t.Helper()
	type row struct {
		value                       []byte
		reason, sourceID, sourceURL string
	}
	rows := map[string][]row{}
	recs, err := a.p.Lake().Scan(context.Background(), table.BronzeDLQ)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		col := func(name string) int { return r.Schema().FieldIndices(name)[0] }
		part := r.Column(col("broker_partition")).(*array.Int32)
		off := r.Column(col("broker_offset")).(*array.Int64)
		val := r.Column(col("value")).(*array.Binary)
		reason := r.Column(col("reason")).(*array.String)
		sid := r.Column(col("source_id")).(*array.String)
		surl := r.Column(col("source_url")).(*array.String)
		for i := range int(r.NumRows()) {
			k := fmt.Sprintf("%d/%d", part.Value(i), off.Value(i))
			rows[k] = append(rows[k], row{bytes.Clone(val.Value(i)), reason.Value(i), sid.Value(i), surl.Value(i)})
		}
		r.Release()
	}
	var q strings.Builder
	if err := marts.Query(context.Background(), a.p.Lake(), "SELECT count(*) AS n FROM bronze.recentchange_dlq WHERE reason <> ''", marts.FormatCSV, &q, marts.QueryOptions{}); err != nil {
		t.Errorf("query the DLQ table: %v", err)
	} else if got, want := strings.TrimSpace(strings.TrimPrefix(q.String(), "n\n")), fmt.Sprint(len(msgs)); got != want {
		t.Errorf("query: %s rows with a reason, want %s", got, want)
	}
	if len(rows) != len(msgs) {
		t.Errorf("%s: %d distinct offsets, want the topic's %d", table.BronzeDLQ, len(rows), len(msgs))
	}
	for _, m := range msgs {
		k := fmt.Sprintf("%d/%d", m.Partition, m.Offset)
		got := rows[k]
		if len(got) != 1 {
			t.Errorf("%s: offset %s in %d rows, want 1", table.BronzeDLQ, k, len(got))
			continue
		}
		g := got[0]
		if !bytes.Equal(g.value, m.Value) || g.reason != string(m.Header(ingest.HeaderReason)) ||
			g.sourceID != string(m.Header(ingest.HeaderSourceID)) || g.sourceURL != string(m.Header(ingest.HeaderSourceURL)) || g.reason == "" {
			t.Errorf("%s offset %s: got value %.40q reason %q source %q %q; want the message's %.40q %q %q %q", table.BronzeDLQ, k,
				g.value, g.reason, g.sourceID, g.sourceURL, m.Value, m.Header(ingest.HeaderReason), m.Header(ingest.HeaderSourceID), m.Header(ingest.HeaderSourceURL))
		}
	}
}
