package marts

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestModelsDocExamples: every example model of docs/models.md (a sql
// block whose first line names its file under models/) is built by a
// refresh on the fixture lake with all its checks passing, and passes
// `model test` (TryModel) too.
func TestModelsDocExamples(t *testing.T) {
	page, err := os.ReadFile("../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(-- models/([a-z_]+\\.sql)[^\n]*\n.*?)```").FindAllStringSubmatch(string(page), -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/models.md has %d example models, want the two worked examples", len(blocks))
	}
	dir := t.TempDir()
	files := map[string]string{}
	for _, b := range blocks {
		files[b[2]] = b[1]
	}
	models := writeModels(t, dir, files)
	lake, log := fixtureLake(t)
	ctx := context.Background()
	rep, err := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), Models: models}).Refresh(ctx)
	if err != nil {
		t.Fatalf("refresh with the page's models: %v\n%v", err, rep.Checks)
	}
	if len(rep.Models) != len(blocks) {
		t.Fatalf("built %+v, want the page's %d models", rep.Models, len(blocks))
	}
	for _, md := range rep.Models {
		if md.Rows == 0 {
			t.Errorf("%s: no rows", md.Ident)
		}
	}
	for _, b := range blocks {
		trial, err := TryModel(ctx, lake, filepath.Join(dir, b[2]), models, FormatTable, 5, io.Discard, QueryOptions{TempDir: t.TempDir()})
		if err != nil {
			t.Fatalf("model test %s: %v", b[2], err)
		}
		if !trial.Passed() || trial.Rows == 0 || len(trial.Checks) == 0 {
			t.Fatalf("model test %s: %+v", b[2], trial)
		}
		if !strings.HasPrefix(trial.Built, "day ") && !strings.HasPrefix(trial.Built, "hour ") {
			t.Fatalf("model test %s built %q, want the newest day or hour", b[2], trial.Built)
		}
	}
}
