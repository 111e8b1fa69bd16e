package appliance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"lakehouse/marts"
	"lakehouse/table"
)

// ModelTrial is one `lakehouse model test`: a model file tried on the
// lake without writing to it.
type ModelTrial struct {
	Warehouse string // the table storage ("": <data>/warehouse)
	File      string // the model
	Models    string // the models directory it may read models of ("": none)
	Format    string // of the rows printed: marts.FormatTable, csv or json
	Rows      int    // rows printed at most
	Memory    string // DuckDB's memory limit
	Timeout   time.Duration
}

// Check refuses settings that cannot work.
func (t ModelTrial) Check() Problems {
	var probs Problems
	probs.Positive("timeout", t.Timeout)
	if t.Rows < 0 {
		probs.Add("rows", "%d: want 0 or more", t.Rows)
	}
	if t.Timeout+leaseMargin > table.MaxLease {
		probs.Add("timeout", "%s: at most %s (beside the running appliance the trial holds its snapshots' files that long, plus %s)",
			t.Timeout, table.MaxLease-leaseMargin, leaseMargin)
	}
	return probs
}

// TryModel compiles t.File against the lake in c.Data (with the models of
// t.Models it reads, as the lake holds them), builds it on the newest unit
// its inputs hold, runs its checks there and writes a summary and its
// first rows to w. Beside a running appliance it reads through it, on
// tables the appliance leases to it. It writes nothing to the lake; a
// model that breaks a rule is a *marts.ModelError, a check that fails
// ErrTrialChecks.
func (c *Store) TryModel(ctx context.Context, t ModelTrial, w io.Writer) error {
	var others []marts.Model
	if t.Models != "" {
		var refused []error
		var err error
		if others, refused, err = marts.LoadModels(t.Models); err != nil {
			return err
		}
		for _, e := range refused {
			fmt.Fprintf(w, "(ignored: %v)\n", e)
		}
	}
	_, lake, live, err := c.OpenReaders(ctx, t.Warehouse, false, true)
	if err != nil {
		return err
	}
	defer lake.Close()
	tctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	if live != nil {
		_, release, err := leaseTables(ctx, live, lake, t.Timeout+leaseMargin)
		if err != nil {
			return err
		}
		defer release()
	}
	var rows bytes.Buffer
	trial, err := marts.TryModel(tctx, lake, t.File, others, t.Format, t.Rows, &rows, marts.QueryOptions{MemoryLimit: t.Memory})
	if err != nil {
		if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("model test: stopped after its timeout, %s", t.Timeout)
		}
		return err
	}
	fmt.Fprintf(w, "model %s, by %s, reads %v\n", trial.Ident, trial.Unit, trial.Reads)
	what := "the " + trial.Built
	if trial.Built == "all" {
		what = "the whole table"
	}
	fmt.Fprintf(w, "built %s: %s (nothing written)\n", what, rowsOf(trial.Rows))
	for _, chk := range trial.Checks {
		status := "PASS"
		if !chk.Passed {
			status = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: %s\n", status, chk.Name, chk.Message)
	}
	fmt.Fprintf(w, "\nfirst %s:\n", rowsOf(min(int64(t.Rows), trial.Rows)))
	if _, err := w.Write(rows.Bytes()); err != nil {
		return err
	}
	if !trial.Passed() {
		return ErrTrialChecks
	}
	return nil
}

// ErrTrialChecks: a model tried with TryModel built, but a check failed.
var ErrTrialChecks = errors.New("model test: a check failed")

func rowsOf(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}
