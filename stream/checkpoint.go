package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// Offset is a source position as JSON text. The engine treats it as opaque
// and compares offsets only for equality; the Source that produced it knows
// its meaning (per-partition next offsets for a broker topic, a snapshot id
// for a table). Sources must encode deterministically.
type Offset string

// OffsetEntry is offsets/<Batch>: the batch's planned range, written durably
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
}

// CommitEntry is commits/<Batch>: written only after the sink's commit
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
//	offsets/<N>   OffsetEntry of batch N, durable before N runs
//	commits/<N>   CommitEntry of batch N, durable after the sink committed
//	state/<N>     state version N of a stateful query
//
// Every file is written with temp file, fsync, rename, fsync of the directory.
// A Checkpoint is used by one runner at a time.
type Checkpoint struct {
	Dir string
}

// OpenCheckpoint opens (creating if needed) the checkpoint directory dir and
// removes temp files a crash left behind.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir}
	for _, d := range []string{dir, c.sub("offsets"), c.sub("commits"), c.sub("state")} {
		if err := mkdirDurable(d); err != nil {
			return nil, fmt.Errorf("open checkpoint: %w", err)
		}
		if err := removeTemps(d); err != nil {
			return nil, fmt.Errorf("open checkpoint: %w", err)
		}
	}
	return c, nil
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

// WriteOffsets durably writes offsets/<e.Batch>.
func (c *Checkpoint) WriteOffsets(e OffsetEntry) error {
	return c.writeEntry("offsets", e.Batch, e)
}

// WriteCommit durably writes commits/<e.Batch>.
func (c *Checkpoint) WriteCommit(e CommitEntry) error {
	return c.writeEntry("commits", e.Batch, e)
}

// Offsets reads offsets/<batch>; ErrNoEntry if it does not exist.
func (c *Checkpoint) Offsets(batch int64) (OffsetEntry, error) {
	var e OffsetEntry
	err := readJSON(filepath.Join(c.sub("offsets"), strconv.FormatInt(batch, 10)), &e)
	if err != nil {
		return e, fmt.Errorf("read offset entry %d: %w", batch, err)
	}
	return e, nil
}

// Commit reads commits/<batch>; ErrNoEntry if it does not exist.
func (c *Checkpoint) Commit(batch int64) (CommitEntry, error) {
	var e CommitEntry
	err := readJSON(filepath.Join(c.sub("commits"), strconv.FormatInt(batch, 10)), &e)
	if err != nil {
		return e, fmt.Errorf("read commit entry %d: %w", batch, err)
	}
	return e, nil
}

// LatestOffsets returns the offset entry with the highest batch id.
func (c *Checkpoint) LatestOffsets() (OffsetEntry, bool, error) {
	ids, err := c.batches("offsets")
	if err != nil || len(ids) == 0 {
		return OffsetEntry{}, false, err
	}
	e, err := c.Offsets(ids[len(ids)-1])
	return e, err == nil, err
}

// LatestCommit returns the commit entry with the highest batch id.
func (c *Checkpoint) LatestCommit() (CommitEntry, bool, error) {
	ids, err := c.batches("commits")
	if err != nil || len(ids) == 0 {
		return CommitEntry{}, false, err
	}
	e, err := c.Commit(ids[len(ids)-1])
	return e, err == nil, err
}

// CommitsAfter returns the retained commit entries with batch > after, in
// batch order.
func (c *Checkpoint) CommitsAfter(after int64) ([]CommitEntry, error) {
	ids, err := c.batches("commits")
	if err != nil {
		return nil, err
	}
	var out []CommitEntry
	for _, id := range ids {
		if id <= after {
			continue
		}
		e, err := c.Commit(id)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
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

// Purge removes offset, commit and state entries of batches below keepFrom.
// Entries are removed oldest first, so a crash mid-purge leaves a suffix.
func (c *Checkpoint) Purge(keepFrom int64) error {
	for _, kind := range []string{"state", "commits", "offsets"} {
		ids, err := c.batches(kind)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if id >= keepFrom {
				break
			}
			if err := os.Remove(filepath.Join(c.sub(kind), strconv.FormatInt(id, 10))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("purge %s/%d: %w", kind, id, err)
			}
		}
	}
	return nil
}

func (c *Checkpoint) writeEntry(kind string, batch int64, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s entry %d: %w", kind, batch, err)
	}
	if err := writeDurable(c.sub(kind), strconv.FormatInt(batch, 10), b); err != nil {
		return fmt.Errorf("write %s entry %d: %w", kind, batch, err)
	}
	return nil
}

// batches lists the batch ids present under kind, ascending.
func (c *Checkpoint) batches(kind string) ([]int64, error) {
	ents, err := os.ReadDir(c.sub(kind))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	ids := make([]int64, 0, len(ents))
	for _, e := range ents {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || id < 0 {
			continue // temp files and strangers
		}
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
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
