package table

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
	bolt "go.etcd.io/bbolt"

	"lakehouse/table/catalog"
)

var clientSchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})

// spellings are locations that all name a directory of bronze or silver
// (wh is the warehouse), as a client might spell them.
func spellings(wh string) []string {
	return []string{
		wh + "/bronze.db/recentchange",
		"file://" + wh + "/bronze.db/recentchange",
		"file://localhost" + wh + "/bronze.db/recentchange",
		"file:" + wh + "/bronze.db/recentchange",
		wh + "/x/../bronze.db/recentchange",
		wh + "//bronze.db/recentchange",
		wh + "/./bronze.db/recentchange",
		"file://" + wh + "/y/../silver.db/edits",
		"file://" + wh + "/%62ronze.db/recentchange",
		wh + "/%62ronze.db/recentchange",
		wh + "/bronze.db",
		wh,
		wh + "/",
		"file://" + wh,
		wh + "/silver.db/edits/",
		wh + "/bronze.db/recentchange/data/../../../silver.db",
	}
}

// TestLocationRuleRefusesSpellings: every spelling of a bronze or silver
// directory, set as a create's location, a namespace's location, a
// set-location commit or a write.data/metadata.path property of a client
// table, is refused with ErrLocation before anything is written; paths
// outside the warehouse and a second root are refused too; a client
// location of its own is accepted.
func TestLocationRuleRefusesSpellings(t *testing.T) {
	ctx := context.Background()
	l := openWithTables(t)
	wh := l.Warehouse()
	cat := l.cat
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cat.CreateNamespace(ctx, icetable.Identifier{"client"}, nil))
	if _, err := cat.CreateTable(ctx, icetable.Identifier{"client", "ok"}, clientSchema); err != nil {
		t.Fatalf("a client table at its default location: %v", err)
	}
	before := treeOf(t, wh, "bronze.db", "silver.db")
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, catalog.ErrLocation) {
			t.Errorf("%s: got %v, want ErrLocation", what, err)
		}
	}
	for i, loc := range spellings(wh) {
		name := "t" + string(rune('a'+i))
		ident := icetable.Identifier{"client", name}
		_, err := cat.CreateTable(ctx, ident, clientSchema, icecat.WithLocation(loc))
		refused("create at "+loc, err)
		if err != nil && !errors.Is(err, catalog.ErrReserved) {
			t.Errorf("create at %s: %v does not say the directory is reserved", loc, err)
		}
		ns := icetable.Identifier{"ns" + name}
		refused("namespace location "+loc, cat.CreateNamespace(ctx, ns, iceberg.Properties{"location": loc}))
		_, _, err = cat.CommitTable(ctx, icetable.Identifier{"client", "ok"}, nil, []icetable.Update{icetable.NewSetLocationUpdate(loc)})
		refused("set-location "+loc, err)
		for _, key := range []string{icetable.WriteDataPathKey, icetable.WriteMetadataPathKey} {
			if !strings.Contains(loc, ".db") {
				continue // the warehouse itself: a data path may be a directory in it
			}
			_, _, err = cat.CommitTable(ctx, icetable.Identifier{"client", "ok"}, nil,
				[]icetable.Update{icetable.NewSetPropertiesUpdate(iceberg.Properties{key: loc})})
			refused(key+" "+loc, err)
		}
	}
	// A client namespace's location, then a plain create under it.
	_, err := cat.UpdateNamespaceProperties(ctx, icetable.Identifier{"client"}, nil, iceberg.Properties{"location": wh + "/bronze.db"})
	refused("namespace property location", err)
	for _, loc := range []string{"/etc/lakehouse", "file:///tmp/elsewhere", "s3://bucket/x", "relative/dir", wh + "/../outside", "file://otherhost" + wh + "/client.db/x"} {
		_, err := cat.CreateTable(ctx, icetable.Identifier{"client", "out"}, clientSchema, icecat.WithLocation(loc))
		refused("create at "+loc, err)
	}
	// A second warehouse root: the location ends in <namespace>.db/<name>.
	must(cat.CreateNamespace(ctx, icetable.Identifier{"dos"}, nil))
	_, err = cat.CreateTable(ctx, icetable.Identifier{"dos", "t"}, clientSchema, icecat.WithLocation(wh+"/sub/dos.db/t"))
	refused("a second root", err)
	if after := treeOf(t, wh, "bronze.db", "silver.db"); after != before {
		t.Errorf("refused requests changed bronze's or silver's directories:\nbefore %s\nafter  %s", before, after)
	}
	for _, loc := range []string{wh + "/client.db/mine", "file://" + wh + "/elsewhere/t", wh + "/bronze.dbx/t"} {
		if _, err := cat.CreateTable(ctx, icetable.Identifier{"client", "m" + filepath.Base(filepath.Dir(loc))}, clientSchema, icecat.WithLocation(loc)); err != nil {
			t.Errorf("create at %s: %v, want it accepted", loc, err)
		}
	}
	if odd, err := l.OddTables(ctx); err != nil || len(odd) != 0 {
		t.Errorf("odd tables after refused requests: %v (%v)", odd, err)
	}
}

// treeOf lists every file under wh's dirs with its size.
func treeOf(t *testing.T, wh string, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(wh, d), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			st, err := e.Info()
			if err == nil {
				b.WriteString(p + " " + st.ModTime().String() + ";")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// FuzzLocationRule: for any location and data path, the rule either
// refuses the client table (ErrLocation) or every path the lake would
// write for it (its metadata file, a manifest, a data file), resolved by
// the lake's own file IO, is inside the warehouse and outside every owned
// namespace's directory, and its location is not the warehouse nor above
// such a directory.
func FuzzLocationRule(f *testing.F) {
	dir, err := os.MkdirTemp("", "fuzzlocation")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = os.RemoveAll(dir) })
	l, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = l.Close() })
	wh := l.Warehouse()
	for _, s := range spellings(wh) {
		f.Add(s, "")
		f.Add(wh+"/client.db/t", s)
	}
	f.Add(wh+"/client.db/t", "")
	f.Add("file:"+wh+"/a%2F..%2Fbronze.db", "")
	f.Fuzz(func(t *testing.T, loc, dataPath string) {
		props := iceberg.Properties{}
		if dataPath != "" {
			props[icetable.WriteDataPathKey] = dataPath
		}
		meta, err := icetable.NewMetadata(clientSchema, nil, icetable.UnsortedSortOrder, loc, props)
		if err != nil {
			return
		}
		err = l.guard.CheckTable(icetable.Identifier{"client", "t"}, meta)
		if err != nil {
			if !errors.Is(err, catalog.ErrLocation) {
				t.Fatalf("refused without ErrLocation: %v", err)
			}
			return
		}
		provider, err := icetable.LoadLocationProvider(meta.Location(), meta.Properties())
		if err != nil {
			t.Fatalf("accepted, but iceberg-go has no location provider for it: %v", err)
		}
		metaFile, err := provider.NewTableMetadataFileLocation(3)
		if err != nil {
			t.Fatal(err)
		}
		actual := l.rooted.actual
		for _, p := range []string{metaFile, provider.NewMetadataLocation("m.avro"), provider.NewDataLocation("d.parquet"), meta.Location()} {
			rp, err := l.rooted.resolve(p)
			if err != nil {
				t.Fatalf("accepted %q (data path %q), but the lake's file IO refuses %q: %v", loc, dataPath, p, err)
			}
			if !strings.HasPrefix(rp, actual+"/") {
				t.Fatalf("accepted %q: %q resolves to %s, not inside the warehouse %s", loc, p, rp, actual)
			}
			for ns := range l.guard.own {
				d := actual + "/" + ns + ".db"
				if rp == d || strings.HasPrefix(rp, d+"/") || (p == meta.Location() && strings.HasPrefix(d, rp+"/")) {
					t.Fatalf("accepted %q: %q resolves to %s, against %s", loc, p, rp, d)
				}
			}
		}
	})
}

// TestOddTablesOpenAndDrop: a catalog holding a client table at a default
// location under a second root and one whose metadata is in bronze's
// directory (as requests before the location rule could leave them) opens;
// its own tables commit; OddTables names both with the reason; DropOdd
// drops them and refuses a table that is not odd; a reopen lists none.
func TestOddTablesOpenAndDrop(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	wh := l.Warehouse()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "catalog.db"), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, ns := range []string{"dos", "client"} {
			if err := tx.Bucket([]byte("namespaces")).Put([]byte(ns), []byte(`{}`)); err != nil {
				return err
			}
		}
		tb := tx.Bucket([]byte("tables"))
		if err := tb.Put([]byte("dos\x00t"), []byte(`{"metadata-location":"`+wh+`/sub/dos.db/t/metadata/00000-x.metadata.json"}`)); err != nil {
			return err
		}
		return tb.Put([]byte("client\x00x"), []byte(`{"metadata-location":"`+wh+`/bronze.db/recentchange/metadata/00001-x.metadata.json"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	l, err = Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatalf("open with odd client entries: %v", err)
	}
	defer l.Close()
	if got := l.cat.(*catalog.Catalog).Root(); got != wh {
		t.Fatalf("root %s, want %s (the owned tables')", got, wh)
	}
	if _, err := l.CommitBatch(ctx, StreamProgress, Batch{Query: "q", ID: 1, Records: nil}); err != nil {
		t.Fatalf("own table commit: %v", err)
	}
	odd, err := l.OddTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(odd) != 2 || odd[0].Name != "client.x" || odd[1].Name != "dos.t" ||
		!strings.Contains(odd[0].Reason, "bronze") || !strings.Contains(odd[1].Reason, "another warehouse root") {
		t.Fatalf("odd tables: %+v", odd)
	}
	if err := l.DropOdd(ctx, StreamProgress); !errors.Is(err, ErrNotOdd) {
		t.Errorf("drop an own table as odd: %v, want ErrNotOdd", err)
	}
	for _, o := range odd {
		if err := l.DropOdd(ctx, o.Name); err != nil {
			t.Fatal(err)
		}
	}
	if odd, err := l.OddTables(ctx); err != nil || len(odd) != 0 {
		t.Errorf("after dropping: %v (%v)", odd, err)
	}
}

// TestPurgeDeletesOnlyTheTablesOwnFiles: a client table whose snapshot
// lists a data file of its own and one of bronze's is purged: its entry,
// its own data file and its metadata go; bronze's file stays (the purge
// says it kept one) and bronze scans as before.
func TestPurgeDeletesOnlyTheTablesOwnFiles(t *testing.T) {
	ctx := context.Background()
	l := openWithTables(t)
	if _, err := l.CommitBatch(ctx, StreamProgress, Batch{Query: "q", ID: 1, Records: []arrow.RecordBatch{progressRecord()}}); err != nil {
		t.Fatal(err)
	}
	own, err := l.load(ctx, StreamProgress)
	if err != nil {
		t.Fatal(err)
	}
	var ownFile string
	for _, df := range dataFilesOf(t, own) {
		ownFile = df
	}
	if ownFile == "" {
		t.Fatal("inconclusive: the appliance's table has no data file")
	}
	ident := icetable.Identifier{"client", "t"}
	if err := l.cat.CreateNamespace(ctx, icetable.Identifier{"client"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := l.cat.CreateTable(ctx, ident, clientSchema)
	if err != nil {
		t.Fatal(err)
	}
	mine := tbl.Location() + "/data/mine.parquet"
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(ctx, []iceberg.DataFile{dataFile(t, mine, 1, 4), dataFile(t, ownFile, 1, 4)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = l.cat.(*catalog.Catalog).PurgeTable(ctx, ident)
	if !errors.Is(err, catalog.ErrPurgeIncomplete) || !strings.Contains(err.Error(), filepath.Base(ownFile)) {
		t.Fatalf("purge: %v, want ErrPurgeIncomplete naming %s", err, filepath.Base(ownFile))
	}
	if ok, _ := l.cat.CheckTableExists(ctx, ident); ok {
		t.Error("the purged table's entry is still there")
	}
	if _, err := os.Stat(mine); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the table's own data file: %v, want it deleted", err)
	}
	if left := treeOf(t, tbl.Location(), "metadata"); left != "" {
		t.Errorf("the table's metadata left: %s", left)
	}
	if _, err := os.Stat(ownFile); err != nil {
		t.Fatalf("the appliance's data file the client listed: %v, want it kept", err)
	}
	recs, err := l.Scan(ctx, StreamProgress)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	if len(recs) == 0 {
		t.Error("the appliance's table scans empty after the purge")
	}
}

// dataFilesOf lists the data files of tbl's current snapshot.
func dataFilesOf(t *testing.T, tbl *icetable.Table) []string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	return out
}

// TestLocationRuleOnS3: on an S3 warehouse a location resolves to the raw
// object key iceberg-go's S3 file IO takes: another bucket or scheme, or a
// key outside the prefix, is outside; a key in an owned namespace's
// directory is reserved; a key other engines would clean differently is
// refused; a client prefix of its own is accepted.
func TestLocationRuleOnS3(t *testing.T) {
	g := &locationGuard{own: map[string]bool{"bronze": true, "silver": true}, wh: "s3://lake/warehouse"}
	for _, tc := range []struct {
		loc      string
		ok, resv bool
	}{
		{"s3://lake/warehouse/client.db/t", true, false},
		{"s3a://lake/warehouse/client.db/t", true, false},
		{"s3://lake/warehouse/bronze.db/recentchange", false, true},
		{"s3://lake/warehouse/x/../bronze.db/recentchange", false, false},
		{"s3://lake/warehouse/bronze.db", false, true},
		{"s3://lake/warehouse", false, true},
		{"s3://lake/warehouse//client.db/t", false, false},
		{"s3://other/warehouse/client.db/t", false, false},
		{"s3://lake/warehouse2/t", false, false},
		{"gs://lake/warehouse/client.db/t", false, false},
		{"/tmp/warehouse/client.db/t", false, false},
	} {
		meta, err := icetable.NewMetadata(clientSchema, nil, icetable.UnsortedSortOrder, tc.loc, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = g.CheckTable(icetable.Identifier{"client", "t"}, meta)
		if (err == nil) != tc.ok || errors.Is(err, catalog.ErrReserved) != tc.resv || (err != nil && !errors.Is(err, catalog.ErrLocation)) {
			t.Errorf("%s: got %v, want ok %v, reserved %v", tc.loc, err, tc.ok, tc.resv)
		}
	}
}

// TestClientPropertiesBounded: a client namespace's or table's properties
// over a bound (a key, a value, all together) are ErrLimit with nothing
// written; the appliance's own tables are not bounded.
func TestClientPropertiesBounded(t *testing.T) {
	ctx := context.Background()
	l := openWithTables(t)
	cat := l.cat
	big := strings.Repeat("v", MaxPropertyValue+1)
	for name, props := range map[string]iceberg.Properties{
		"key":   {strings.Repeat("k", MaxPropertyKey+1): "v"},
		"value": {"k": big},
		"total": func() iceberg.Properties {
			p := iceberg.Properties{}
			for i := range 5 {
				p[string(rune('a'+i))] = big[:MaxPropertyValue]
			}
			return p
		}(),
	} {
		if err := cat.CreateNamespace(ctx, icetable.Identifier{"c" + name}, props); !errors.Is(err, catalog.ErrLimit) {
			t.Errorf("namespace with a large %s: %v, want ErrLimit", name, err)
		}
		if err := cat.CreateNamespace(ctx, icetable.Identifier{"ok" + name}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.UpdateNamespaceProperties(ctx, icetable.Identifier{"ok" + name}, nil, props); !errors.Is(err, catalog.ErrLimit) {
			t.Errorf("namespace update with a large %s: %v, want ErrLimit", name, err)
		}
		if _, err := cat.CreateTable(ctx, icetable.Identifier{"ok" + name, "t"}, clientSchema, icecat.WithProperties(props)); !errors.Is(err, catalog.ErrLimit) {
			t.Errorf("table with a large %s: %v, want ErrLimit", name, err)
		}
		if got, err := cat.LoadNamespaceProperties(ctx, icetable.Identifier{"ok" + name}); err != nil || len(got) != 0 {
			t.Errorf("after refused updates: %v (%v)", got, err)
		}
	}
	if _, err := l.CommitBatch(ctx, StreamProgress, Batch{Query: "q", ID: 1, TableProps: map[string]string{"lakehouse.x": big}}); err != nil {
		t.Errorf("an own table's large property: %v", err)
	}
}
