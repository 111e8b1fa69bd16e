package marts

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"lakehouse/internal/crashtest"
	"lakehouse/table"
)

// modelsChild refreshes the lake in dir with the models of dir "models"
// until the armed hook kills it.
func modelsChild(s crashtest.Spec) error {
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: s.Get("dir")})
	if err != nil {
		return err
	}
	models, refused, err := LoadModels(s.Get("models"))
	if err != nil || len(refused) > 0 {
		return errors.Join(err, errors.Join(refused...))
	}
	m := New(lake, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler), Models: models})
	s.Arm()
	if _, err := m.Refresh(ctx); err != nil && !errors.Is(err, ErrChecksFailed) {
		return err
	}
	return errors.New("refreshed without being killed")
}

// TestModelRefreshKill: a refresh SIGKILLed right after it wrote the
// first user model (and, in the second case, the second) leaves each
// model table at its previous snapshot or at the new one, never half
// written: the one written holds what its SQL gives over silver now, the
// other what it gave before the append. The next refresh rebuilds only
// what is left (the day the append touched, of the model not yet
// written) and both then hold what their SQL gives.
func TestModelRefreshKill(t *testing.T) {
	for _, tc := range []struct {
		name       string
		skip       int    // hits of the hook before the kill: 4 built-in marts, then the models
		restartBy  string // what the restart rebuilds of edits_by_type_daily
		restartPer string // and of wiki_edits_daily
	}{
		{"after the first model", 4, "0 days", "1 day"},
		{"after the second model", 5, "0 days", "0 days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			lake, log := fixtureLakeWith(t, table.Config{Dir: dir})
			mdir := t.TempDir()
			models := writeModels(t, mdir, map[string]string{"by_type.sql": modelByType, "per_wiki.sql": modelPerWiki})
			m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), Models: models})
			if _, err := m.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			before := map[string]int64{}
			for _, id := range []string{"gold.edits_by_type_daily", "gold.wiki_edits_daily"} {
				f, err := lake.DataFiles(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				before[id] = f.SnapshotID
			}
			oldPerWiki := queryCSV(t, lake, "SELECT * FROM gold.wiki_edits_daily ORDER BY ALL")
			late := edit("ev-late", t0.Add(72*time.Hour), "enwiki", "new", "Late", "Eve", false, 10)
			commit(t, lake, table.SilverEdits, "silver", 2, table.SilverEditsSchema, []row{late})
			_ = lake.Close()

			c := crashtest.Start(t, "models", "dir", dir, "models", mdir, "hook", hookAfterGoldWrite, "skip", strconv.Itoa(tc.skip))
			if err := c.Wait(t, 5*time.Minute); !crashtest.WasKilled(err) {
				t.Fatalf("child: got %v, want death by SIGKILL\noutput:\n%s", err, crashtest.Tail(c.Output(), 40))
			}
			if !c.Fired(hookAfterGoldWrite) {
				t.Fatalf("inconclusive: hook %s did not fire\noutput:\n%s", hookAfterGoldWrite, crashtest.Tail(c.Output(), 40))
			}

			lake = openTestLake(t, dir)
			byType, err := lake.DataFiles(ctx, "gold.edits_by_type_daily")
			if err != nil {
				t.Fatal(err)
			}
			if byType.SnapshotID == before["gold.edits_by_type_daily"] {
				t.Fatal("inconclusive: the first model was not written before the kill")
			}
			perWiki, err := lake.DataFiles(ctx, "gold.wiki_edits_daily")
			if err != nil {
				t.Fatal(err)
			}
			wrote := perWiki.SnapshotID != before["gold.wiki_edits_daily"]
			if wrote != (tc.skip == 5) {
				t.Fatalf("the second model written before the kill: %v, want %v", wrote, tc.skip == 5)
			}
			nowByType := "SELECT CAST(event_time AS DATE) AS day, wiki, type, count(*) AS edits, sum(byte_delta) AS bytes FROM silver.edits GROUP BY ALL ORDER BY ALL"
			nowPerWiki := "SELECT CAST(event_time AS DATE) AS day, wiki, count(*) AS edits FROM silver.edits GROUP BY ALL ORDER BY ALL"
			if got, want := queryCSV(t, lake, "SELECT * FROM gold.edits_by_type_daily ORDER BY ALL"), queryCSV(t, lake, nowByType); got != want {
				t.Fatalf("after the kill the first model holds\n%s\nwant\n%s", got, want)
			}
			wantPer := oldPerWiki
			if wrote {
				wantPer = queryCSV(t, lake, nowPerWiki)
			}
			if got := queryCSV(t, lake, "SELECT * FROM gold.wiki_edits_daily ORDER BY ALL"); got != wantPer {
				t.Fatalf("after the kill the second model holds\n%s\nwant\n%s", got, wantPer)
			}

			m = New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), Models: models})
			rep, err := m.Refresh(ctx)
			if err != nil {
				t.Fatalf("restart: %v", err)
			}
			want := []ModelReport{{Ident: "gold.edits_by_type_daily", Scope: tc.restartBy}, {Ident: "gold.wiki_edits_daily", Scope: tc.restartPer}}
			got := slices.Clone(rep.Models)
			for i := range got {
				got[i].Rows, got[i].Statements = 0, 0
			}
			if !slices.Equal(got, want) {
				t.Fatalf("the restart rebuilt %+v, want %+v", got, want)
			}
			for id, q := range map[string]string{"gold.edits_by_type_daily": nowByType, "gold.wiki_edits_daily": nowPerWiki} {
				if got, want := queryCSV(t, lake, "SELECT * FROM "+id+" ORDER BY ALL"), queryCSV(t, lake, q); got != want {
					t.Fatalf("after the restart %s holds\n%s\nwant\n%s", id, got, want)
				}
			}
		})
	}
}
