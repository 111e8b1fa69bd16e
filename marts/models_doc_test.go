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
	blocks := docExamples(t)
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

// docExamples returns the example models of docs/models.md: per sql block
// whose first line names its file under models/, the block and the file
// name.
func docExamples(t testing.TB) [][]string {
	t.Helper()
	page, err := os.ReadFile("../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(-- models/([a-z_]+\\.sql)[^\n]*\n.*?)```").FindAllStringSubmatch(string(page), -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/models.md has %d example models, want the two worked examples", len(blocks))
	}
	return blocks
}

// docModels parses the example models of docs/models.md.
func docModels(t testing.TB) []Model {
	t.Helper()
	var out []Model
	for _, b := range docExamples(t) {
		m, err := ParseModel(filepath.Join(t.TempDir(), b[2]), b[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
