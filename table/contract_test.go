package table_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"lakehouse/table"
)

// TestContract runs the same storage contract against local disk and S3.
func TestContract(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b backend)
	}{
		{"EnsureTablesIdempotent", testEnsureTables},
		{"CommitAndReplay", testCommitAndReplay},
		{"EmptyBatchCommitsMarker", testEmptyBatch},
		{"ZombieRace", testZombieRace},
		{"ConcurrentQueries", testConcurrentQueries},
		{"IncrementalReads", testIncrementalReads},
		{"DataFiles", testDataFiles},
		{"MarkersSurviveMaintenance", testMarkersSurviveMaintenance},
		{"ExpireProtect", testExpireProtect},
		{"SchemaMismatch", testSchemaMismatch},
		{"Overwrite", testOverwrite},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
			}
		})
	}
}

func testEnsureTables(t *testing.T, b backend) {
	dir := t.TempDir()
	cfg := b.cfg(t, dir)
	l := openLake(t, cfg)
	ctx := context.Background()
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatalf("second EnsureTables: %v", err)
	}
	for _, ident := range table.Tables {
		want, _ := table.Schema(ident)
		files, err := l.DataFiles(ctx, ident)
		if err != nil {
			t.Fatalf("data files %s: %v", ident, err)
		}
		if len(files.Paths) != 0 {
			t.Fatalf("%s: got %d files in a new table, want 0", ident, len(files.Paths))
		}
		// The files' schema has the exported schema's field ids.
		for i, f := range want.Fields() {
			id, ok := f.Metadata.GetValue("PARQUET:field_id")
			if !ok || id != itoa(i+1) {
				t.Fatalf("%s.%s: got field id %q, want %d", ident, f.Name, id, i+1)
			}
			if got, ok := files.Schema.FindFieldByID(i + 1); !ok || got.Name != f.Name {
				t.Fatalf("%s: the files' schema has %+v (found %v) as field %d, want %s", ident, got, ok, i+1, f.Name)
			}
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func testCommitAndReplay(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	res := mustCommit(t, l, table.Bronze, batchOf("q1", 1, bronzeRecord(0, 0, 100)))
	if !res.Committed || res.Rows != 100 || res.DataFiles < 1 || res.SnapshotID == 0 {
		t.Fatalf("first commit: got %+v, want committed 100 rows", res)
	}
	m, ok, err := l.LastCommitted(ctx, table.Bronze, "q1")
	if err != nil || !ok {
		t.Fatalf("LastCommitted: %v %v", ok, err)
	}
	if m.Batch != 1 || m.Offsets != `{"0":100}` || m.SnapshotID != res.SnapshotID {
		t.Fatalf("marker: got %+v, want batch 1 offsets {\"0\":100} snapshot %d", m, res.SnapshotID)
	}
	// Replays of the same or an older batch commit nothing.
	for _, id := range []int64{1, 0} {
		again := mustCommit(t, l, table.Bronze, batchOf("q1", id, bronzeRecord(0, 0, 100)))
		if again.Committed {
			t.Fatalf("replay of batch %d: got committed, want skipped", id)
		}
	}
	mustCommit(t, l, table.Bronze, batchOf("q1", 2, bronzeRecord(0, 100, 50)))
	n, seen := scanOffsets(t, l, table.Bronze)
	if n != 150 || len(seen) != 150 {
		t.Fatalf("scan: got %d rows, %d distinct offsets, want 150/150", n, len(seen))
	}
	snaps, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 {
		t.Fatalf("snapshots: got %d, want 2", len(snaps))
	}
	s := snaps[0].Summary
	if s["lakehouse.query-id"] != "q1" || s["lakehouse.batch-id"] != "1" || s["lakehouse.offsets"] != `{"0":100}` {
		t.Fatalf("summary: got %v", s)
	}
	// Another query id has its own marker.
	if _, ok, _ := l.LastCommitted(ctx, table.Bronze, "other"); ok {
		t.Fatalf("LastCommitted(other): got ok, want none")
	}
}

// testEmptyBatch: a batch without rows commits its marker (with the batch's
// properties) and no snapshot; a replay of it is skipped.
func testEmptyBatch(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	res := mustCommit(t, l, table.Bronze, table.Batch{Query: "silver", RunID: "run-1", ID: 7, Offsets: "bronze@42",
		Props: map[string]string{"watermark": "123", "lakehouse.note": "x", "added-records": "999"}})
	if !res.Committed || res.Rows != 0 || res.DataFiles != 0 || res.SnapshotID != 0 {
		t.Fatalf("empty batch: got %+v, want committed with 0 rows and no snapshot", res)
	}
	m, ok, err := l.LastCommitted(ctx, table.Bronze, "silver")
	if err != nil || !ok || m.Batch != 7 || m.Offsets != "bronze@42" || m.RunID != "run-1" {
		t.Fatalf("marker: got %+v %v %v, want batch 7 of run-1", m, ok, err)
	}
	if m.Props["lakehouse.watermark"] != "123" || m.Props["lakehouse.note"] != "x" {
		t.Fatalf("marker props: got %v, want lakehouse.watermark and lakehouse.note", m.Props)
	}
	if m.Props["added-records"] != "" || m.Props["lakehouse.added-records"] != "999" {
		t.Fatalf("marker props: reserved key not prefixed: %v", m.Props)
	}
	snaps, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil || len(snaps) != 0 {
		t.Fatalf("appends: got %d %v, want none", len(snaps), err)
	}
	if st, err := l.Stats(ctx, table.Bronze); err != nil || st.Snapshots != 0 {
		t.Fatalf("stats: got %+v %v, want no snapshot", st, err)
	}
	if got := mustCommit(t, l, table.Bronze, table.Batch{Query: "silver", ID: 7}); got.Committed {
		t.Fatalf("empty replay: got committed, want skipped")
	}
	// A batch with rows after it is one snapshot whose summary carries the
	// properties (prefixed, never over a reserved key).
	rec := bronzeRecord(0, 0, 3)
	defer rec.Release()
	res = mustCommit(t, l, table.Bronze, table.Batch{Query: "silver", ID: 8, Offsets: "bronze@43",
		Records: []arrow.RecordBatch{rec}, Props: map[string]string{"watermark": "124", "added-records": "999"}})
	if !res.Committed || res.Rows != 3 || res.SnapshotID == 0 {
		t.Fatalf("batch 8: got %+v, want 3 rows in a snapshot", res)
	}
	snaps, err = l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("appends: got %d %v, want 1", len(snaps), err)
	}
	sum := snaps[0].Summary
	if sum["lakehouse.watermark"] != "124" || sum["added-records"] != "3" || sum["lakehouse.added-records"] != "999" {
		t.Fatalf("summary: got %v, want lakehouse.watermark 124 and the reserved added-records untouched", sum)
	}
}

// testZombieRace: two handles (separate Lakes on one Dir) race the same
// (query, batch) from two goroutines; exactly one snapshot results.
func testZombieRace(t *testing.T, b backend) {
	dir := t.TempDir()
	cfg := b.cfg(t, dir)
	l1 := openLake(t, cfg)
	l2 := openLake(t, cfg)
	ctx := context.Background()
	const rounds = 5
	for id := int64(1); id <= rounds; id++ {
		var wg sync.WaitGroup
		results := make([]table.Result, 2)
		errs := make([]error, 2)
		for i, l := range []*table.Lake{l1, l2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = l.CommitBatch(ctx, table.Bronze, batchOf("bronze", id, bronzeRecord(0, (id-1)*10, 10)))
			}()
		}
		wg.Wait()
		committed := 0
		for i := range 2 {
			if errs[i] != nil {
				t.Fatalf("batch %d handle %d: %v", id, i, errs[i])
			}
			if results[i].Committed {
				committed++
			}
		}
		if committed != 1 {
			t.Fatalf("batch %d: got %d committed, want exactly 1", id, committed)
		}
	}
	snaps, err := l1.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		t.Fatal(err)
	}
	perBatch := map[string]int{}
	for _, s := range snaps {
		perBatch[s.Summary["lakehouse.batch-id"]]++
	}
	if len(snaps) != rounds {
		t.Fatalf("snapshots: got %d (%v), want %d", len(snaps), perBatch, rounds)
	}
	n, seen := scanOffsets(t, l1, table.Bronze)
	if n != rounds*10 || len(seen) != rounds*10 {
		t.Fatalf("rows: got %d (%d distinct), want %d", n, len(seen), rounds*10)
	}
}

// testConcurrentQueries: different queries appending to one table lose races
// to each other and must retry, not fail or duplicate.
func testConcurrentQueries(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	const perQuery = 4
	var wg sync.WaitGroup
	errs := make(chan error, 3*perQuery)
	for q := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := int64(1); id <= perQuery; id++ {
				off := int64(q)*1000 + id*10
				if _, err := l.CommitBatch(ctx, table.Bronze, batchOf("q"+itoa(q), id, bronzeRecord(int32(q), off, 10))); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent commit: %v", err)
	}
	n, _ := scanOffsets(t, l, table.Bronze)
	if n != 3*perQuery*10 {
		t.Fatalf("rows: got %d, want %d", n, 3*perQuery*10)
	}
	for q := range 3 {
		m, ok, err := l.LastCommitted(ctx, table.Bronze, "q"+itoa(q))
		if err != nil || !ok || m.Batch != perQuery {
			t.Fatalf("marker q%d: got %+v %v %v, want batch %d", q, m, ok, err, perQuery)
		}
	}
}

func testIncrementalReads(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	var ids []int64
	for id := int64(1); id <= 4; id++ {
		res := mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, (id-1)*5, 5)))
		ids = append(ids, res.SnapshotID)
	}
	if _, err := l.Compact(ctx, table.Bronze, mergeAll); err != nil {
		t.Fatalf("compact: %v", err)
	}
	mustCommit(t, l, table.Bronze, batchOf("bronze", 5, bronzeRecord(0, 20, 5)))

	snaps, err := l.AppendsAfter(ctx, table.Bronze, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(snaps), 3; got != want {
		t.Fatalf("appends after batch 2: got %d, want %d", got, want)
	}
	for i, s := range snaps {
		if got, want := s.Summary["lakehouse.batch-id"], itoa(i+3); got != want {
			t.Fatalf("appends[%d]: got batch %s, want %s (commit order)", i, got, want)
		}
		if i > 0 && s.Sequence <= snaps[i-1].Sequence {
			t.Fatalf("appends not in sequence order: %d after %d", s.Sequence, snaps[i-1].Sequence)
		}
		recs, err := l.ReadAppended(ctx, table.Bronze, s.ID)
		if err != nil {
			t.Fatalf("read appended %d: %v", s.ID, err)
		}
		var offs []int64
		for _, r := range recs {
			col := r.Column(1).(*array.Int64)
			for j := range col.Len() {
				offs = append(offs, col.Value(j))
			}
			r.Release()
		}
		if len(offs) != 5 {
			t.Fatalf("batch %d: got %d rows, want 5", i+3, len(offs))
		}
		for _, o := range offs {
			if o < int64(i+2)*5 || o >= int64(i+3)*5 {
				t.Fatalf("batch %d: offset %d outside its range", i+3, o)
			}
		}
	}
	if _, err := l.AppendsAfter(ctx, table.Bronze, 12345); !errors.Is(err, table.ErrSnapshotNotFound) {
		t.Fatalf("appends after unknown snapshot: got %v, want ErrSnapshotNotFound", err)
	}
}

func testDataFiles(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	mustCommit(t, l, table.Bronze, batchOf("bronze", 1, bronzeRecord(0, 0, 120))) // crosses midnight
	files, err := l.DataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if len(files.Paths) != 2 {
		t.Fatalf("files: got %d, want 2 (one per day partition): %v", len(files.Paths), files.Paths)
	}
	for _, p := range files.Paths {
		switch b.name {
		case "local":
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("data file %s: %v", p, err)
			}
		case "s3":
			if !strings.HasPrefix(p, "s3://lake/warehouse/") {
				t.Fatalf("data file %s: want s3://lake/warehouse/ prefix", p)
			}
		}
	}
	if f, ok := files.Schema.FindFieldByID(1); !ok || f.Name != "broker_partition" || !f.Type.Equals(iceberg.PrimitiveTypes.Int32) {
		t.Fatalf("the files' field 1: got %+v (found %v), want broker_partition int", f, ok)
	}
	if f, ok := files.Schema.FindFieldByID(3); !ok || f.Name != "broker_ts" || !f.Type.Equals(iceberg.PrimitiveTypes.TimestampTz) {
		t.Fatalf("the files' field 3: got %+v (found %v), want broker_ts timestamptz", f, ok)
	}
}

// testMarkersSurviveMaintenance: compaction plus expiry down to one snapshot
// keeps every query's marker and all rows.
func testMarkersSurviveMaintenance(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	for id := int64(1); id <= 6; id++ {
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, (id-1)*10, 10)))
	}
	mustCommit(t, l, table.Bronze, batchOf("backfill", 3, bronzeRecord(1, 0, 10)))
	res, err := l.Compact(ctx, table.Bronze, mergeAll)
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	if res.FilesRemoved < 2 || res.FilesAdded < 1 {
		t.Fatalf("compact: got %+v, want small files rewritten", res)
	}
	if err := l.RewriteManifests(ctx, table.Bronze); err != nil {
		t.Fatalf("rewrite manifests: %v", err)
	}
	n, err := l.ExpireSnapshots(ctx, table.Bronze, 1, 0, 0)
	if err != nil {
		t.Fatalf("expire: %v", err)
	}
	if n < 7 {
		t.Fatalf("expire: got %d removed, want >= 7", n)
	}
	snaps, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 0 {
		t.Fatalf("append snapshots after expiry: got %d, want 0 (only the replace/rewrite head is left)", len(snaps))
	}
	for q, want := range map[string]int64{"bronze": 6, "backfill": 3} {
		m, ok, err := l.LastCommitted(ctx, table.Bronze, q)
		if err != nil || !ok || m.Batch != want {
			t.Fatalf("marker %s after maintenance: got %+v %v %v, want batch %d", q, m, ok, err, want)
		}
		if got := mustCommit(t, l, table.Bronze, batchOf(q, want, bronzeRecord(9, 0, 1))); got.Committed {
			t.Fatalf("replay of %s/%d after maintenance: got committed, want skipped", q, want)
		}
	}
	rows, _ := scanOffsets(t, l, table.Bronze)
	if rows != 70 {
		t.Fatalf("rows after maintenance: got %d, want 70", rows)
	}
	mustCommit(t, l, table.Bronze, batchOf("bronze", 7, bronzeRecord(0, 60, 10)))
	if rows, _ := scanOffsets(t, l, table.Bronze); rows != 80 {
		t.Fatalf("rows after next batch: got %d, want 80", rows)
	}
}

func testExpireProtect(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	var snaps []int64
	for id := int64(1); id <= 6; id++ {
		snaps = append(snaps, mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, id*10, 10))).SnapshotID)
	}
	// A reader has consumed up to batch 2: snapshot 3 and later stay.
	n, err := l.ExpireSnapshots(ctx, table.Bronze, 1, 0, snaps[2])
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("expired: got %d, want 2", n)
	}
	after, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 4 || after[0].ID != snaps[2] {
		t.Fatalf("retained: got %d starting %d, want 4 starting %d", len(after), after[0].ID, snaps[2])
	}
	if _, err := l.ExpireSnapshots(ctx, table.Bronze, 1, 0, snaps[0]); !errors.Is(err, table.ErrSnapshotNotFound) {
		t.Fatalf("expire protecting an expired snapshot: got %v, want ErrSnapshotNotFound", err)
	}
}

func testSchemaMismatch(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	wrong := arrow.NewSchema([]arrow.Field{{Name: "broker_partition", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, wrong)
	bld.Field(0).(*array.Int64Builder).Append(1)
	badCols := bld.NewRecordBatch()
	// Right columns but a null in a required column.
	nb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	nb.Field(0).(*array.Int32Builder).Append(0)
	nb.Field(1).(*array.Int64Builder).Append(0)
	nb.Field(2).AppendNull()
	nb.Field(3).AppendNull()
	nb.Field(4).(*array.StringBuilder).Append("{}")
	nb.Field(5).(*array.TimestampBuilder).Append(0)
	nullReq := nb.NewRecordBatch()
	for name, rec := range map[string]arrow.RecordBatch{"columns": badCols, "null-in-required": nullReq} {
		t.Run(name, func(t *testing.T) {
			_, err := l.CommitBatch(ctx, table.Bronze, batchOf("bronze", 1, bronzeRecord(0, 0, 3), rec))
			if !errors.Is(err, table.ErrSchemaMismatch) {
				t.Fatalf("got %v, want ErrSchemaMismatch", err)
			}
			if _, ok, _ := l.LastCommitted(ctx, table.Bronze, "bronze"); ok {
				t.Fatalf("marker written for a rejected batch")
			}
			files, err := l.DataFiles(ctx, table.Bronze)
			if err != nil || len(files.Paths) != 0 || files.SnapshotID != 0 {
				t.Fatalf("table changed by a rejected batch: %+v %v", files, err)
			}
		})
	}
	if _, err := l.CommitBatch(ctx, "nope.nope", batchOf("x", 1)); !errors.Is(err, table.ErrNoSuchTable) {
		t.Fatalf("commit to a missing table: got %v, want ErrNoSuchTable", err)
	}
	if _, err := l.CommitBatch(ctx, table.Bronze, table.Batch{ID: 1}); !errors.Is(err, table.ErrInvalidBatch) {
		t.Fatalf("commit without query: got %v, want ErrInvalidBatch", err)
	}
}

func testOverwrite(t *testing.T, b backend) {
	l := openLake(t, b.cfg(t, t.TempDir()))
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "wiki", Type: arrow.BinaryTypes.String},
		{Name: "edits", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	build := func(rows map[string]*int64) arrow.RecordBatch {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer bld.Release()
		for k, v := range rows {
			bld.Field(0).(*array.StringBuilder).Append(k)
			if v == nil {
				bld.Field(1).AppendNull()
			} else {
				bld.Field(1).(*array.Int64Builder).Append(*v)
			}
		}
		return bld.NewRecordBatch()
	}
	one, two := int64(1), int64(2)
	if err := l.Overwrite(ctx, "gold.edits_per_wiki", sc, []arrow.RecordBatch{build(map[string]*int64{"a": &one, "b": &two})}, nil); err != nil {
		t.Fatalf("first overwrite: %v", err)
	}
	if err := l.Overwrite(ctx, "gold.edits_per_wiki", sc, []arrow.RecordBatch{build(map[string]*int64{"c": &two, "d": nil})}, nil); err != nil {
		t.Fatalf("second overwrite: %v", err)
	}
	recs, err := l.Scan(ctx, "gold.edits_per_wiki")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		w, e := r.Column(0).(*array.String), r.Column(1).(*array.Int64)
		for i := range w.Len() {
			if e.IsNull(i) {
				got[w.Value(i)] = "null"
			} else {
				got[w.Value(i)] = itoa(int(e.Value(i)))
			}
		}
		r.Release()
	}
	if len(got) != 2 || got["c"] != "2" || got["d"] != "null" {
		t.Fatalf("after overwrite: got %v, want c=2 d=null", got)
	}
	if err := l.Overwrite(ctx, "gold.edits_per_wiki", sc, nil, nil); err != nil {
		t.Fatalf("empty overwrite: %v", err)
	}
	if rows, _ := scanOffsets(t, l, "gold.edits_per_wiki"); rows != 0 {
		t.Fatalf("after empty overwrite: got %d rows, want 0", rows)
	}
}
