package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"lakehouse/broker"
	"lakehouse/internal/localapi"
	"lakehouse/marts"
	"lakehouse/table"
	"lakehouse/verify"
)

// long runs the full prove scenario and the per-hook variants: set
// LAKEHOUSE_LONG=1 (an environment variable rather than a test flag, so that
// `LAKEHOUSE_LONG=1 go test ./...` works in every package).
var long = os.Getenv("LAKEHOUSE_LONG") != ""

// envChild makes the test binary act as the lakehouse command, so tests can
// run the real appliance as a child process and SIGKILL it.
const envChild = "LAKEHOUSE_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// selfCommand runs this test binary as `lakehouse <args>`.
func selfCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envChild+"=1")
	return cmd
}

func proveConfig(t *testing.T) verify.ProveConfig {
	return verify.ProveConfig{
		DataDir: filepath.Join(t.TempDir(), "lake"),
		Launch: func(args []string) *exec.Cmd {
			return selfCommand(append([]string{"run"}, args...)...)
		},
		Out: testWriter{t},
		// Smaller batches than prove's default: the scenarios here are a
		// few thousand events, and each kill lands up to two batches after
		// its target.
		MaxOffsetsPerTrigger: 200,
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestProve is the kill test on every push: the real appliance (this
// binary, `run`) fed over real SSE, SIGKILLed three times mid-backlog,
// restarted, drained and verified against the broker. Same code path as
// `lakehouse prove`, fewer loops and a faster trigger.
func TestProve(t *testing.T) {
	cfg := proveConfig(t)
	cfg.Kills = 3
	cfg.Loops = 10
	cfg.Trigger = 300 * time.Millisecond
	if long {
		cfg.Loops = verify.DefaultLoops
		cfg.Trigger = verify.DefaultProveTrigger
	}
	provePasses(t, cfg)
}

// provePasses runs the kill test and fails t unless it passes with every
// on-time edit/new event of the scenario and every violation expected and
// found: silver-complete and dlq-table are only worth something then.
func provePasses(t *testing.T, cfg verify.ProveConfig) verify.ProveResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := verify.Prove(ctx, cfg)
	if err != nil {
		t.Fatalf("prove (seed %d): %v", res.Seed, err)
	}
	t.Log(res.Summary())
	if c := res.Report.Counts; c.SilverExpected != res.Expect.Silver || c.SilverMissing != 0 || c.DLQTable.Rows != res.Expect.DLQ {
		t.Fatalf("verify expected %d ids in silver (%d missing), the scenario %d; DLQ table %d rows, violations %d",
			c.SilverExpected, c.SilverMissing, res.Expect.Silver, c.DLQTable.Rows, res.Expect.DLQ)
	}
	return res
}

// TestProveRESTCatalog is the kill test with the appliance's tables in an
// Iceberg REST catalog (table/restcatalog, served by the test process; the
// appliance runs with --catalog rest+http://...): every commit, the
// exactly-once markers and the recovery after each SIGKILL go through the
// REST protocol, and the verifier reads through it too. The run counts only
// if the appliance never made a catalog.db of its own.
func TestProveRESTCatalog(t *testing.T) {
	cfg := proveConfig(t)
	cfg.Kills = 3
	cfg.Loops = 6
	cfg.Trigger = 300 * time.Millisecond
	cfg.RESTCatalog = true
	provePasses(t, cfg)
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "catalog.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("inconclusive: the appliance made a catalog.db of its own (%v): its tables were not only in the REST catalog", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "rest-catalog", "catalog.db")); err != nil {
		t.Fatalf("the REST catalog's own catalog.db: %v", err)
	}
}

// TestProveInconclusive: a kill before any bronze commit, or after the whole
// backlog is committed, proves nothing and must be reported as such.
func TestProveInconclusive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		frac    float64
		trigger time.Duration
	}{
		{"before any commit", 0, time.Minute}, // the first batch waits a full trigger
		{"after the last commit", 1, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := proveConfig(t)
			cfg.Loops = 2
			cfg.Sample = 200
			cfg.Trigger = tc.trigger
			cfg.KillFractions = []float64{tc.frac}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			_, err := verify.Prove(ctx, cfg)
			if !errors.Is(err, verify.ErrInconclusive) {
				t.Fatalf("prove with a kill %s: got %v, want ErrInconclusive", tc.name, err)
			}
		})
	}
}

// TestProveAtHooks kills the appliance at each fault hook of the batch
// protocol (long mode only; the default run covers random kills).
func TestProveAtHooks(t *testing.T) {
	if !long {
		t.Skip("per-hook prove runs only with LAKEHOUSE_LONG=1")
	}
	for _, hook := range []string{"stream.after-offset-entry", "table.after-data-files", "table.after-commit",
		"stream.after-state-save", "broker.after-commit", "ingest.before-append"} {
		t.Run(hook, func(t *testing.T) {
			cfg := proveConfig(t)
			cfg.Loops = 10
			cfg.Kills = 2
			cfg.Trigger = 300 * time.Millisecond
			cfg.CrashAt = hook
			if strings.HasPrefix(hook, "broker.") || strings.HasPrefix(hook, "ingest.") {
				// These fire on every ingest batch, from the first: pace
				// the source so bronze has committed some of the backlog
				// when the hook kills the appliance.
				cfg.Rate = 1000
				cfg.CrashSkip = 8
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res, err := verify.Prove(ctx, cfg)
			if err != nil {
				t.Fatalf("prove at %s (seed %d): %v", hook, res.Seed, err)
			}
			t.Log(res.Summary())
		})
	}
}

// TestDemo runs the README's first command, smaller: the whole pipeline on
// a loopback replay, a marts refresh and the summary, then checks the lake
// with the verifier.
func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out strings.Builder
	code := run([]string{"demo", "--data", dir, "--events", "600", "--loops", "2", "--rate", "0"}, &out, &out)
	if code != 0 {
		t.Fatalf("demo exited %d:\n%s", code, out.String())
	}
	for _, want := range []string{"asset check PASS silver_unique_event_ids", "asset check PASS bronze_offsets_match_broker",
		"asset check PASS gold_reconciles_silver", "gold marts:", "sessions of the newest day:", "the lake is in"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// The marts' DuckDB spills to <data>/tmp/duckdb, which nothing but the
	// marts creates (DuckDB makes only the last element, and only once a
	// statement spills): it exists after a refresh of a new data
	// directory.
	if st, err := os.Stat(filepath.Join(dir, "tmp", "duckdb")); err != nil || !st.IsDir() {
		t.Errorf("after the demo's refresh the spill directory is missing: %v", err)
	}
	// Event times spread over hours: sessions close and every gold mart
	// has rows.
	for _, tbl := range append([]string{"silver.editor_sessions"}, marts.GoldTables...) {
		var q strings.Builder
		if code := run([]string{"query", "--data", dir, "--format", "csv", "SELECT count(*) AS n FROM " + tbl}, &q, &q); code != 0 {
			t.Fatalf("query %s exited %d:\n%s", tbl, code, q.String())
		}
		if n := strings.TrimSpace(strings.TrimPrefix(q.String(), "n\n")); n == "0" || n == "" {
			t.Errorf("after the demo %s has no rows (%q)", tbl, q.String())
		}
	}
	// The example questions of docs/querying.md each answer with rows.
	doc, err := os.ReadFile("docs/querying.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(examples) < 5 {
		t.Fatalf("docs/querying.md has %d SQL examples, want at least 5", len(examples))
	}
	for _, ex := range examples {
		var q strings.Builder
		if code := run([]string{"query", "--data", dir, "--format", "csv", ex[1]}, &q, &q); code != 0 || strings.Count(q.String(), "\n") < 2 {
			t.Errorf("example of docs/querying.md answered nothing (exit %d):\n%s\n%s", code, ex[1], q.String())
		}
	}
	// The lake the demo left passes the verifier; a second demo resets it.
	var vout strings.Builder
	if code := run([]string{"verify", "--data", dir}, &vout, &vout); code != 0 {
		t.Fatalf("verify after demo exited %d:\n%s", code, vout.String())
	}
	out.Reset()
	if code := run([]string{"demo", "--data", dir, "--events", "100", "--loops", "1", "--rate", "0"}, &out, &out); code != 0 {
		t.Fatalf("second demo on the same directory exited %d:\n%s", code, out.String())
	}
}

// TestDemoFailsWhenACheckFails: a demo whose asset check fails exits
// non-zero, after printing the check. The marts' DuckDB memory limit is
// set too small for the freshness check's Parquet reads.
func TestDemoFailsWhenACheckFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out strings.Builder
	code := run([]string{"demo", "--data", dir, "--events", "2000", "--loops", "3", "--rate", "0", "--marts-memory", "16MB"}, &out, &out)
	failed := strings.Contains(out.String(), "asset check FAIL")
	switch {
	case !failed && code == 0:
		t.Fatalf("inconclusive: every check passed under a 16MB memory limit:\n%s", out.String())
	case failed && code == 0:
		t.Fatalf("demo exited 0 although a check failed:\n%s", out.String())
	case !failed:
		t.Fatalf("demo exited %d without a failed check:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "asset checks failed") {
		t.Errorf("the demo's error does not say the checks failed:\n%s", out.String())
	}
}

// TestDemoRefusesForeignDirectory: the demo resets only directories it made.
func TestDemoRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if code := run([]string{"demo", "--data", dir}, &out, &out); code == 0 || !strings.Contains(out.String(), "not made by the demo") {
		t.Fatalf("demo on a foreign directory: exit %d, output %q; want a refusal", code, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); err != nil {
		t.Fatalf("demo touched a foreign directory: %v", err)
	}
}

// TestBenchSmoke is the CI variant of `lakehouse bench`: two short phases of
// the whole appliance; it fails if any published event is missing from
// silver (correctness, not speed), or a phase's line lacks its CPU split by
// stage (unless the test binary holds the one CPU profile itself).
func TestBenchSmoke(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"bench", "--smoke"}, &out, &out); code != 0 {
		t.Fatalf("bench --smoke exited %d:\n%s", code, out.String())
	}
	t.Log(out.String())
	if f := flag.Lookup("test.cpuprofile"); f != nil && f.Value.String() != "" {
		return
	}
	split := regexp.MustCompile(`µs/event:( [a-z]+ \d+\.\d)+ = \d+\.\d\n`)
	if got := len(split.FindAllString(out.String(), -1)); got != 2 {
		t.Errorf("%d phase lines with a CPU split by stage, want 2:\n%s", got, out.String())
	}
}

// TestCLIErrors: bad input gets a clear error and a non-zero exit.
func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"topics", "--data", filepath.Join(dir, "none")}, 1, "no broker at"},
		{[]string{"verify", "--data", filepath.Join(dir, "none")}, 1, "no broker at"},
		{[]string{"reland", "--data", filepath.Join(dir, "none")}, 1, "demo` or `"},
		{[]string{"query", "--data", filepath.Join(dir, "none"), "select 1"}, 1, "no lake at"},
		{[]string{"query"}, 2, "Usage: lakehouse query"},
		{[]string{"prove", "--crash-at", "no.such.hook"}, 2, "not a fault hook"},
		{[]string{"run", "--checkpoint-loss", "maybe", "--data", filepath.Join(dir, "x"), "--no-ingest"}, 2, "want rebuild or fresh"}, // a usage error, before anything is created
	} {
		var out strings.Builder
		code := run(tc.args, &out, &out)
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("lakehouse %v: exit %d, output %q; want exit %d and %q", tc.args, code, out.String(), tc.code, tc.want)
		}
	}
}

// TestProveCheckpointLoss deletes the bronze checkpoint before the last
// restart: with the default policy nothing is duplicated and the query-id
// change is reported.
func TestProveCheckpointLoss(t *testing.T) {
	cfg := proveConfig(t)
	cfg.Kills = 2
	cfg.Loops = 6
	cfg.Trigger = 300 * time.Millisecond
	cfg.CheckpointLoss = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := verify.Prove(ctx, cfg)
	if err != nil {
		t.Fatalf("prove --checkpoint-loss (seed %d): %v", res.Seed, err)
	}
	found := false
	for _, c := range res.Report.Checks {
		found = found || c.Name == "checkpoint-loss-reported" && c.OK
	}
	if !found {
		t.Fatalf("checkpoint-loss-reported check missing: %+v", res.Report.Checks)
	}
}

// TestDemoOnS3: the demo with its warehouse on S3 (gofakes3 on 127.0.0.1,
// settings from the AWS_* variables): the marts refresh, the asset checks,
// `query` and `verify` read the S3 data files through local copies, every
// gold mart has rows, the checks that compare gold with silver pass, and
// every gold table equals, row for row, the marts a local warehouse builds
// from the same silver.
func TestDemoOnS3(t *testing.T) {
	mem := s3mem.New()
	if err := mem.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	dir := filepath.Join(t.TempDir(), "demo")
	wh := "s3://lake/demo"
	var out strings.Builder
	if code := run([]string{"demo", "--data", dir, "--warehouse", wh, "--events", "600", "--loops", "2", "--rate", "0"}, &out, &out); code != 0 {
		t.Fatalf("demo on S3 exited %d:\n%s", code, out.String())
	}
	for _, want := range []string{"asset check PASS silver_unique_event_ids", "asset check PASS bronze_offsets_match_broker",
		"asset check PASS gold_reconciles_silver", "gold marts:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	for _, tbl := range append([]string{"silver.editor_sessions"}, marts.GoldTables...) {
		var q strings.Builder
		if code := run([]string{"query", "--data", dir, "--warehouse", wh, "--format", "csv", "SELECT count(*) AS n FROM " + tbl}, &q, &q); code != 0 {
			t.Fatalf("query %s on S3 exited %d:\n%s", tbl, code, q.String())
		}
		if n := strings.TrimSpace(strings.TrimPrefix(q.String(), "n\n")); n == "0" || n == "" {
			t.Errorf("after the demo on S3 %s has no rows (%q)", tbl, q.String())
		}
	}
	if objs, err := mem.ListBucket("lake", nil, gofakes3.ListBucketPage{}); err != nil || len(objs.Contents) == 0 {
		t.Fatalf("inconclusive: nothing in the S3 bucket (%v)", err)
	}
	var vout strings.Builder
	if code := run([]string{"verify", "--data", dir, "--warehouse", wh}, &vout, &vout); code != 0 {
		t.Fatalf("verify after the demo on S3 exited %d:\n%s", code, vout.String())
	}
	goldEqualsLocal(t, dir, table.Config{Dir: dir, Warehouse: wh, ReadOnly: true,
		S3: table.S3Config{Endpoint: srv.URL, Region: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test"}})

	// Beside the appliance running on the same data directory, query and
	// verify read through it, from S3, and answer as before.
	count := "SELECT count(*) AS n, count(DISTINCT (broker_partition, broker_offset)) AS o FROM bronze.recentchange"
	var stopped strings.Builder
	if code := run([]string{"query", "--data", dir, "--warehouse", wh, "--format", "csv", count}, &stopped, &stopped); code != 0 {
		t.Fatalf("query on S3: %s", stopped.String())
	}
	child := selfCommand("run", "--data", dir, "--warehouse", wh, "--no-ingest", "--http", "off", "--refresh", "0")
	var clog strings.Builder
	child.Stdout, child.Stderr = &clog, &clog
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Signal(syscall.SIGTERM); _ = child.Wait() }()
	waitFor(t, time.Minute, "the appliance's local endpoint", func() bool {
		_, err := os.Stat(filepath.Join(dir, localapi.File))
		return err == nil
	})
	var live strings.Builder
	if code := run([]string{"query", "--data", dir, "--warehouse", wh, "--format", "csv", count}, &live, &live); code != 0 || live.String() != stopped.String() {
		t.Fatalf("query on S3 beside the appliance: exit %d, %q; stopped %q\n%s", code, live.String(), stopped.String(), clog.String())
	}
	vout.Reset()
	if code := run([]string{"verify", "--data", dir, "--warehouse", wh}, &vout, &vout); code != 0 || !strings.Contains(vout.String(), "skip bolt-files") {
		t.Fatalf("verify on S3 beside the appliance: exit %d\n%s", code, vout.String())
	}
}

// goldEqualsLocal copies the silver tables of the stopped lake cfg opens
// into a lake on local disk, refreshes the marts there and compares every
// gold table, row for row, with the one the appliance wrote.
func goldEqualsLocal(t *testing.T, dir string, cfg table.Config) {
	t.Helper()
	ctx := context.Background()
	remote, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	local, err := table.Open(ctx, table.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if err := local.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{table.SilverEdits, table.EditorSessions} {
		recs, err := remote.Scan(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := local.CommitBatch(ctx, id, table.Batch{Query: "copy", ID: 0, Offsets: "0", Records: recs}); err != nil {
			t.Fatalf("copy %s: %v", id, err)
		}
		for _, r := range recs {
			r.Release()
		}
	}
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The checks on the copy cannot pass (it has no bronze); the marts are
	// written before them.
	if _, err := marts.New(local, db, marts.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Refresh(ctx); err != nil && !errors.Is(err, marts.ErrChecksFailed) {
		t.Fatalf("refresh on the local copy: %v", err)
	}
	for _, id := range marts.GoldTables {
		var got, want strings.Builder
		q := "SELECT * FROM " + id + " ORDER BY ALL"
		if err := marts.Query(ctx, remote, q, marts.FormatCSV, &got, marts.QueryOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := marts.Query(ctx, local, q, marts.FormatCSV, &want, marts.QueryOptions{}); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || strings.Count(want.String(), "\n") < 2 {
			t.Errorf("%s on S3 differs from the marts of the same silver on local disk (or is empty):\nS3:\n%s\nlocal:\n%s", id, got.String(), want.String())
		}
	}
}
