package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"lakehouse/internal/durable"
)

// Offset is a source position as JSON text. The engine treats it as opaque
// and compares offsets only for equality; the Source that produced it knows
// its meaning (per-partition next offsets for a broker topic, a snapshot id
// for a table). Sources must encode deterministically.
type Offset string

// OffsetEntry is the batch's planned range, appended to the log durably
// before the batch runs. A re-run of the batch uses exactly this entry.
type OffsetEntry struct {
	Batch   int64  `json:"batch"`
	QueryID string `json:"query_id"`
	Start   Offset `json:"start"`
	End     Offset `json:"end"`
	// Meta is query-defined metadata fixed at planning time (for example the
	// watermark a stateful query uses), so a replay computes the same output.
	Meta json.RawMessage `json:"meta,omitempty"`
	// Planned is when the entry was written.
	Planned time.Time `json:"planned"`
	// Unfenced marks the first batch of a fresh start after a lost
	// checkpoint (Batch.Unfenced), so that a re-run of it is too.
	Unfenced bool `json:"unfenced,omitempty"`
}

// CommitEntry is appended to the log only after the sink's commit
// returned. It carries the batch's progress, which is flushed to
// ops.stream_progress later (and again after a crash).
type CommitEntry struct {
	Batch    int64    `json:"batch"`
	QueryID  string   `json:"query_id"`
	Progress Progress `json:"progress"`
}

// queryMeta is the checkpoint's metadata file.
type queryMeta struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// Checkpoint is one query's checkpoint directory:
//
//	metadata      the query id
//	log           the offset entry of every retained batch N (durable
//	              before N runs) and its commit entry (durable after the
//	              sink committed), appended and fsynced (entrylog.go)
//	state/<N>     state version N of a stateful query
//
// The metadata and state files are written with temp file, fsync, rename,
// fsync of the directory. A Checkpoint is used by one runner at a time;
// its reads may come from other goroutines (a status endpoint).
type Checkpoint struct {
	Dir string

	mu  sync.Mutex
	log *entryLog
}

// OpenCheckpoint opens (creating if needed) the checkpoint directory dir
// and removes temp files a crash left behind. The entry log is loaded on
// first use, so a corrupt entry is reported by the read that needs it.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir}
	for _, d := range []string{dir, c.sub("state")} {
		if err := mkdirDurable(d); err != nil {
			return nil, fmt.Errorf("open checkpoint: %w", err)
		}
		if err := removeTemps(d); err != nil {
			return nil, fmt.Errorf("open checkpoint: %w", err)
		}
	}
	return c, nil
}

// entries returns the loaded entry log, loading it on first use: a
// checkpoint written by a version that kept a file per entry (offsets/<N>,
// commits/<N>) is moved into the log then. c.mu must be held.
func (c *Checkpoint) entries() (*entryLog, error) {
	if c.log != nil {
		return c.log, nil
	}
	l, err := openEntryLog(c.Dir)
	if err != nil {
		return nil, err
	}
	if err := migrateEntryFiles(c.Dir, l); err != nil {
		l.close()
		return nil, err
	}
	c.log = l
	return l, nil
}

// Close releases the entry log's file handle; a later use reloads it.
func (c *Checkpoint) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log == nil {
		return nil
	}
	err := c.log.close()
	c.log = nil
	return err
}

func (c *Checkpoint) sub(name string) string { return filepath.Join(c.Dir, name) }

// StateDir is where the state versions are (StateStore).
func (c *Checkpoint) StateDir() string { return c.sub("state") }

var _ StateStore = (*Checkpoint)(nil)

// QueryID returns the stored query id, or "", false when the checkpoint has
// none (new or lost).
func (c *Checkpoint) QueryID() (string, bool, error) {
	var m queryMeta
	err := readJSON(filepath.Join(c.Dir, "metadata"), &m)
	if errors.Is(err, ErrNoEntry) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read query id: %w", err)
	}
	if m.ID == "" {
		return "", false, fmt.Errorf("read query id: empty id: %w", ErrCorruptCheckpoint)
	}
	return m.ID, true, nil
}

// SetQueryID durably stores the query id.
func (c *Checkpoint) SetQueryID(id, name string) error {
	b, err := json.Marshal(queryMeta{ID: id, Name: name, Created: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("encode query id: %w", err)
	}
	if err := writeDurable(c.Dir, "metadata", b); err != nil {
		return fmt.Errorf("write query id: %w", err)
	}
	return nil
}

// WriteOffsets durably appends batch e.Batch's offset entry.
func (c *Checkpoint) WriteOffsets(e OffsetEntry) error {
	return c.write("offset", e.Batch, e)
}

// WriteCommit durably appends batch e.Batch's commit entry.
func (c *Checkpoint) WriteCommit(e CommitEntry) error {
	return c.write("commit", e.Batch, e)
}

// write appends one entry (an OffsetEntry or a CommitEntry) to the log.
func (c *Checkpoint) write(what string, batch int64, e any) error {
	if err := c.withLog(func(l *entryLog) error { return l.add(e) }); err != nil {
		return fmt.Errorf("write %s entry %d: %w", what, batch, err)
	}
	return nil
}

// withLog runs f on the loaded entry log, holding c.mu.
func (c *Checkpoint) withLog(f func(*entryLog) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, err := c.entries()
	if err != nil {
		return err
	}
	return f(l)
}

// Offsets returns batch's offset entry; ErrNoEntry if there is none.
func (c *Checkpoint) Offsets(batch int64) (OffsetEntry, error) {
	var e OffsetEntry
	err := c.withLog(func(l *entryLog) error { return entry(l.offsets, batch, &e) })
	if err != nil {
		return e, fmt.Errorf("read offset entry %d: %w", batch, err)
	}
	return e, nil
}

// Commit returns batch's commit entry; ErrNoEntry if there is none.
func (c *Checkpoint) Commit(batch int64) (CommitEntry, error) {
	var e CommitEntry
	err := c.withLog(func(l *entryLog) error { return entry(l.commits, batch, &e) })
	if err != nil {
		return e, fmt.Errorf("read commit entry %d: %w", batch, err)
	}
	return e, nil
}

// entry sets *e to batch's entry of m; ErrNoEntry if m has none.
func entry[E any](m map[int64]E, batch int64, e *E) error {
	v, ok := m[batch]
	if !ok {
		return ErrNoEntry
	}
	*e = v
	return nil
}

// LatestOffsets returns the offset entry with the highest batch id.
func (c *Checkpoint) LatestOffsets() (e OffsetEntry, ok bool, err error) {
	err = c.withLog(func(l *entryLog) error { e, ok = latest(l.offsets); return nil })
	return e, ok, err
}

// LatestCommit returns the commit entry with the highest batch id.
func (c *Checkpoint) LatestCommit() (e CommitEntry, ok bool, err error) {
	err = c.withLog(func(l *entryLog) error { e, ok = latest(l.commits); return nil })
	return e, ok, err
}

// latest is the entry of m with the highest batch.
func latest[E any](m map[int64]E) (E, bool) {
	if len(m) == 0 {
		var e E
		return e, false
	}
	return m[slices.Max(slices.Collect(maps.Keys(m)))], true
}

// CommitsAfter returns the retained commit entries with batch > after, in
// batch order.
func (c *Checkpoint) CommitsAfter(after int64) (out []CommitEntry, err error) {
	err = c.withLog(func(l *entryLog) error {
		for _, b := range slices.Sorted(maps.Keys(l.commits)) {
			if b > after {
				out = append(out, l.commits[b])
			}
		}
		return nil
	})
	return out, err
}

// SaveState durably stores state version version (the state after batch
// version ran).
func (c *Checkpoint) SaveState(version int64, data []byte) error {
	if err := writeDurable(c.sub("state"), strconv.FormatInt(version, 10), data); err != nil {
		return fmt.Errorf("save state %d: %w", version, err)
	}
	return nil
}

// LoadState returns state version version; ErrNoEntry if it does not exist.
func (c *Checkpoint) LoadState(version int64) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(c.sub("state"), strconv.FormatInt(version, 10)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load state %d: %w", version, ErrNoEntry)
	}
	if err != nil {
		return nil, fmt.Errorf("load state %d: %w", version, err)
	}
	return b, nil
}

// Purge removes the offset, commit and state entries of batches below
// keepFrom. State files are removed oldest first, so a crash mid-purge
// leaves a suffix; the log's entries are dropped at once (and from the file
// at its next rewrite).
func (c *Checkpoint) Purge(keepFrom int64) error {
	ids, err := c.batches("state")
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id >= keepFrom {
			break
		}
		if err := os.Remove(filepath.Join(c.sub("state"), strconv.FormatInt(id, 10))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("purge state/%d: %w", id, err)
		}
	}
	if err := c.withLog(func(l *entryLog) error { return l.purge(keepFrom) }); err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	return nil
}

// batches lists the batch ids present under kind, ascending.
func (c *Checkpoint) batches(kind string) ([]int64, error) { return listBatches(c.sub(kind)) }

// listBatches lists the batch ids named by the files of dir, ascending.
func listBatches(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	ids := make([]int64, 0, len(ents))
	for _, e := range ents {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || id < 0 {
			continue // temp files and strangers
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNoEntry
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %v: %w", path, err, ErrCorruptCheckpoint)
	}
	return nil
}

// migrateEntryFiles moves the entry files of a checkpoint written before
// the log (offsets/<N>, commits/<N>) into the log, then removes them. The
// log is rewritten (durably) before any file goes, so a crash in between
// migrates again; an entry the log already holds is newer and wins.
func migrateEntryFiles(dir string, l *entryLog) error {
	foundO, err := migrateDir(filepath.Join(dir, "offsets"), l.offsets)
	if err != nil {
		return err
	}
	foundC, err := migrateDir(filepath.Join(dir, "commits"), l.commits)
	if err != nil {
		return err
	}
	if !foundO && !foundC {
		return nil
	}
	if err := l.rewrite(); err != nil {
		return err
	}
	for _, kind := range []string{"offsets", "commits"} {
		if err := os.RemoveAll(filepath.Join(dir, kind)); err != nil {
			return fmt.Errorf("remove the migrated %s: %w", kind, err)
		}
	}
	return durable.SyncDir(dir)
}

// migrateDir reads the entry files of dir into m, except the batches m
// has already; found is false when dir does not exist.
func migrateDir[E any](dir string, m map[int64]E) (found bool, err error) {
	ids, err := listBatches(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		if _, ok := m[id]; ok {
			continue
		}
		path := filepath.Join(dir, strconv.FormatInt(id, 10))
		var e E
		if err := readJSON(path, &e); err != nil {
			return true, fmt.Errorf("read %s: %w", path, err)
		}
		m[id] = e
	}
	return true, nil
}
