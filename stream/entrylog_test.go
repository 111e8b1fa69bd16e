package stream

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeBatches(t *testing.T, cp *Checkpoint, from, to int64) {
	t.Helper()
	for b := from; b < to; b++ {
		if err := cp.WriteOffsets(OffsetEntry{Batch: b, Start: Offset(`{"0":1}`), End: Offset(`{"0":2}`)}); err != nil {
			t.Fatal(err)
		}
		if err := cp.WriteCommit(CommitEntry{Batch: b, Progress: Progress{Batch: b, RowsIn: b}}); err != nil {
			t.Fatal(err)
		}
	}
}

func reopen(t *testing.T, cp *Checkpoint) *Checkpoint {
	t.Helper()
	cp.Close()
	cp, err := OpenCheckpoint(cp.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp
}

func latestBatches(t *testing.T, cp *Checkpoint) (planned, committed int64, err error) {
	t.Helper()
	o, ok, err := cp.LatestOffsets()
	if err != nil || !ok {
		return -1, -1, err
	}
	c, ok, err := cp.LatestCommit()
	if err != nil || !ok {
		return o.Batch, -1, err
	}
	return o.Batch, c.Batch, nil
}

// TestEntryLogTornTail: what a crash in the middle of an append leaves (a
// short header, a short payload, zeros where the file grew) is cut off on
// load, the entries before it are intact, and appends go on after them.
func TestEntryLogTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail func(rec []byte) []byte
	}{
		{"short header", func(rec []byte) []byte { return rec[:5] }},
		{"short payload", func(rec []byte) []byte { return rec[:len(rec)-3] }},
		{"zeros", func(rec []byte) []byte { return make([]byte, len(rec)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := reopen(t, &Checkpoint{Dir: t.TempDir()})
			writeBatches(t, cp, 0, 3)
			cp.Close()
			rec, err := appendRecord(nil, kindOffsets, OffsetEntry{Batch: 3})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(cp.Dir, logName)
			whole, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(whole, tc.tail(rec)...), 0o600); err != nil {
				t.Fatal(err)
			}
			cp = reopen(t, cp)
			if p, c, err := latestBatches(t, cp); err != nil || p != 2 || c != 2 {
				t.Fatalf("after a torn tail: planned %d committed %d (%v), want 2 and 2", p, c, err)
			}
			if st, err := os.Stat(path); err != nil || st.Size() != int64(len(whole)) {
				t.Fatalf("the torn tail was not cut off: size %d, want %d (%v)", st.Size(), len(whole), err)
			}
			writeBatches(t, cp, 3, 4)
			cp = reopen(t, cp)
			if p, c, err := latestBatches(t, cp); err != nil || p != 3 || c != 3 {
				t.Fatalf("append after the cut: planned %d committed %d (%v), want 3 and 3", p, c, err)
			}
		})
	}
}

// TestEntryLogCorruptRecord: a whole record whose bytes changed is
// corruption (the file and the byte named), in the middle of the log and
// as its last record alike: only a short or zeroed tail counts as torn.
func TestEntryLogCorruptRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(size int) int
	}{
		{"first record", func(int) int { return recordHeader + 2 }},
		{"last record", func(size int) int { return size - 2 }},
		{"length field", func(int) int { return 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := reopen(t, &Checkpoint{Dir: t.TempDir()})
			writeBatches(t, cp, 0, 3)
			cp.Close()
			path := filepath.Join(cp.Dir, logName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[tc.at(len(b))] ^= 0x01
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err = cp.LatestCommit()
			if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want ErrCorruptCheckpoint naming %s", err, path)
			}
			if tc.name == "length field" {
				return // a longer length runs past the end: read as torn is also acceptable
			}
			if st, _ := os.Stat(path); st.Size() != int64(len(b)) {
				t.Fatalf("a corrupt log was changed on load: size %d, want %d", st.Size(), len(b))
			}
		})
	}
}

// TestEntryLogPurgeBoundsFile: with a purge every ten batches, as the
// runner does, the log file holds at most twice the live entries plus
// minRewrite records (and is rewritten to get there), purged entries stay
// gone after a reopen whether or not a rewrite followed their purge, and a
// later entry of a batch replaces an earlier one.
func TestEntryLogPurgeBoundsFile(t *testing.T) {
	cp := reopen(t, &Checkpoint{Dir: t.TempDir()})
	const retain = 20
	var rewrites int
	var lastSize int64
	for b := int64(0); b < 2000; b++ {
		writeBatches(t, cp, b, b+1)
		if b%10 == 0 && b >= retain {
			if err := cp.Purge(b - retain + 1); err != nil {
				t.Fatal(err)
			}
		}
		st, err := os.Stat(filepath.Join(cp.Dir, logName))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() < lastSize {
			rewrites++
		}
		lastSize = st.Size()
		if n := cp.log.records; n > 2*2*(retain+10)+minRewrite {
			t.Fatalf("batch %d: %d records in the log, want at most %d", b, n, 2*2*(retain+10)+minRewrite)
		}
	}
	if rewrites < 10 {
		t.Fatalf("inconclusive: the log was rewritten %d times in 2000 batches", rewrites)
	}
	if err := cp.WriteCommit(CommitEntry{Batch: 1999, Progress: Progress{Batch: 1999, RowsIn: 7}}); err != nil {
		t.Fatal(err)
	}
	cp = reopen(t, cp)
	for _, b := range []int64{0, 1990 - retain} {
		if _, err := cp.Offsets(b); !errors.Is(err, ErrNoEntry) {
			t.Errorf("offset entry %d, purged: got %v, want ErrNoEntry", b, err)
		}
	}
	if _, err := cp.Offsets(1990 - retain + 1); err != nil {
		t.Errorf("offset entry %d, kept: %v", 1990-retain+1, err)
	}
	if c, err := cp.Commit(1999); err != nil || c.Progress.RowsIn != 7 {
		t.Errorf("the later commit entry of batch 1999: got %+v (%v), want rows_in 7", c.Progress, err)
	}
	after, err := cp.CommitsAfter(1995)
	if err != nil || len(after) != 4 || after[0].Batch != 1996 || after[3].Batch != 1999 {
		t.Errorf("CommitsAfter(1995) after reopening: %d entries (%v), want 1996..1999", len(after), err)
	}
}

// TestEntryLogMigratesEntryFiles: a checkpoint written with a file per
// entry (offsets/<N>, commits/<N>) opens with every entry in the log and
// the old directories gone; a garbled old file is reported by name.
func TestEntryLogMigratesEntryFiles(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"offsets", "commits"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for b := range int64(5) {
		n := strconv.FormatInt(b, 10)
		if err := writeDurable(filepath.Join(dir, "offsets"), n, []byte(`{"batch":`+n+`,"start":"{}","end":"{}"}`)); err != nil {
			t.Fatal(err)
		}
		if b == 4 {
			break // planned, not committed
		}
		if err := writeDurable(filepath.Join(dir, "commits"), n, []byte(`{"batch":`+n+`,"progress":{"rows_in":3}}`)); err != nil {
			t.Fatal(err)
		}
	}
	cp := reopen(t, &Checkpoint{Dir: dir})
	if p, c, err := latestBatches(t, cp); err != nil || p != 4 || c != 3 {
		t.Fatalf("after migrating: planned %d committed %d (%v), want 4 and 3", p, c, err)
	}
	for _, d := range []string{"offsets", "commits"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after migrating: %v, want gone", d, err)
		}
	}
	cp = reopen(t, cp)
	if all, err := cp.CommitsAfter(-1); err != nil || len(all) != 4 || all[3].Progress.RowsIn != 3 {
		t.Fatalf("commits after reopening the migrated log: %+v (%v)", all, err)
	}

	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "commits"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "commits", "3"), []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	cp = reopen(t, &Checkpoint{Dir: bad})
	if _, _, err := cp.LatestCommit(); !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), filepath.Join(bad, "commits", "3")) {
		t.Fatalf("a garbled entry file: got %v, want ErrCorruptCheckpoint naming it", err)
	}
}
