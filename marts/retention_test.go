package marts

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestOpsRetention: ops rows older than OpsRetention are deleted by the
// ops-retention job, newer ones stay; the job is then not due for an hour,
// also for a new Marts on the same lake (the stamp is in the table), so a
// restart does not repeat it.
func TestOpsRetention(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	cfg := Config{OpsRetention: 24 * time.Hour, Logger: slog.New(slog.DiscardHandler), DuckTempDir: t.TempDir()}
	m := New(lake, log, cfg)
	now := time.Now().UTC()
	for i, at := range []time.Time{now.Add(-72 * time.Hour), now.Add(-30 * time.Hour), now.Add(-time.Hour), now} {
		r := Run{ID: "test-" + string(rune('a'+i)), Job: "test", Started: at, Status: StatusOK}
		if err := m.recordRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		t.Helper()
		recs, err := lake.Scan(ctx, OpsRuns)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			for i := 0; i < int(r.NumRows()); i++ {
				if strings.HasPrefix(r.Column(0).ValueStr(i), "test-") {
					n++
				}
			}
			r.Release()
		}
		return n
	}
	if n := count(); n != 4 {
		t.Fatalf("inconclusive: %d test runs recorded, want 4", n)
	}
	run, err := m.RunJob(ctx, JobOpsRetention)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("after retention: %d of the test runs left, want the 2 younger than a day (%s)", n, run.Detail)
	}
	if !strings.Contains(run.Detail, OpsRuns+": 2 rows") {
		t.Errorf("run detail %q does not count the 2 rows", run.Detail)
	}
	if err := m.recordRun(ctx, Run{ID: "test-old", Job: "test", Started: now.Add(-48 * time.Hour), Status: StatusOK}); err != nil {
		t.Fatal(err)
	}
	again, err := New(lake, log, cfg).RunJob(ctx, JobOpsRetention)
	if err != nil || again.Detail != "" {
		t.Fatalf("a second pass within the hour (new Marts): %q, %v; want nothing due", again.Detail, err)
	}
	if n := count(); n != 3 {
		t.Fatalf("a pass that was not due deleted rows: %d left, want 3", n)
	}
}
