package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/internal/localapi"
	"lakehouse/table"
)

// TestOlderLakeUpgradedByRun: a lake whose bronze has the column names of
// the versions before broker_partition and broker_offset (built here from
// a demo lake by renaming them back: the data files are read by field id,
// as the old ones are) is refused by verify, query and reland with the one step
// that upgrades it; after `run --no-ingest` has started on it once, verify
// passes and query reads the new names.
func TestOlderLakeUpgradedByRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo and the appliance")
	}
	dir := filepath.Join(t.TempDir(), "lake")
	var out strings.Builder
	if code := run([]string{"demo", "--data", dir, "--events", "300", "--loops", "1", "--http", "off"}, &out, &out); code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, out.String())
	}
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := lake.Catalog().LoadTable(ctx, icetable.Identifier{"bronze", "recentchange"})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	us := txn.UpdateSchema(true, false).RenameColumn([]string{"broker_partition"}, "partition").RenameColumn([]string{"broker_offset"}, "offset")
	if err := us.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lake.Close(); err != nil {
		t.Fatal(err)
	}

	count := "SELECT count(DISTINCT (broker_partition, broker_offset)) AS n FROM bronze.recentchange"
	for _, args := range [][]string{{"verify", "--data", dir}, {"query", "--data", dir, count}, {"reland", "--data", dir, "--dry-run"}} {
		out.Reset()
		code := run(args, &out, &out)
		for _, want := range []string{"the lake in " + dir + " was written by an older version",
			"bronze.recentchange: columns partition -> broker_partition, offset -> broker_offset",
			"run --data " + dir + " --no-ingest` upgrades the tables in place"} {
			if code != 1 || !strings.Contains(out.String(), want) {
				t.Errorf("%s on the older lake: exit %d, want 1 and %q in:\n%s", args[0], code, want, out.String())
			}
		}
	}
	if code := run([]string{"topics", "--data", dir}, &out, &out); code != 0 {
		t.Errorf("topics on the older lake (it reads only the broker): exit %d\n%s", code, out.String())
	}

	child := selfCommand("run", "--data", dir, "--no-ingest", "--http", "off", "--refresh", "0")
	var clog strings.Builder
	child.Stdout, child.Stderr = &clog, &clog
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the appliance's local endpoint", func() bool {
		_, err := os.Stat(filepath.Join(dir, localapi.File))
		return err == nil
	})
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("run --no-ingest: %v\n%s", err, clog.String())
	}
	out.Reset()
	if code := run([]string{"verify", "--data", dir, "--expect-drained"}, &out, &out); code != 0 {
		t.Fatalf("verify after the upgrade: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"query", "--data", dir, "--format", "csv", count}, &out, &out); code != 0 || !strings.HasPrefix(out.String(), "n\n") {
		t.Fatalf("query after the upgrade: exit %d\n%s", code, out.String())
	}
}
