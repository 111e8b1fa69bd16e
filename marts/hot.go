package marts

import (
	"context"
	"fmt"
)

// defaultHotMaxCandidates is the most pages hot_pages prunes its input to:
// their (wiki, title) pairs are the build side of a join held in DuckDB's
// memory. Late in a real day about 2,000 pages reach the cut; a stream where
// nearly every edit is to another page has as many candidates as pages, and
// pruning would not pay.
const defaultHotMaxCandidates = 20_000

// prepareHotPages runs sql/hot_pages_cut.sql (the windows' end, the cut
// and the candidate pages) and defines hot_input, the edits hot_pages
// groups per (page, editor): the candidates' edits, or all of
// silver.edits_recent when there are more candidates than
// hot_max_candidates (or pruning is off, a negative bound).
func prepareHotPages(ctx context.Context, d *duck) error {
	cut, err := readSQL("sql/hot_pages_cut.sql")
	if err != nil {
		return err
	}
	if _, err := d.db.ExecContext(ctx, cut); err != nil {
		return fmt.Errorf("hot_pages_cut.sql: %w", err)
	}
	var n, bound int64
	if err := d.db.QueryRowContext(ctx, `SELECT count(*), getvariable('hot_max_candidates') FROM hot_candidates`).Scan(&n, &bound); err != nil {
		return fmt.Errorf("count hot_pages candidates: %w", err)
	}
	input := `SELECT * FROM silver.edits_recent`
	if bound >= 0 && n <= bound {
		input = `SELECT e.* FROM silver.edits_recent e SEMI JOIN hot_candidates c ON e.wiki = c.wiki AND e.title = c.title`
	}
	if _, err := d.db.ExecContext(ctx, "CREATE OR REPLACE TEMP VIEW hot_input AS "+input); err != nil {
		return fmt.Errorf("hot_pages input: %w", err)
	}
	return nil
}
