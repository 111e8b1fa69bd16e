package table

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icetable "github.com/apache/iceberg-go/table"
)

// DefaultRecentAppendBytes is the default Config.RecentAppendBytes: two
// batches at the stream's default byte cap.
const DefaultRecentAppendBytes = 64 << 20

// recentAppendTTL is how long rows no one takes stay in memory (a
// downstream query that stopped, or a table no query follows).
const recentAppendTTL = time.Minute

// recentAppends keeps the rows of the appends this Lake committed itself,
// so that the downstream query in the same process takes them from memory
// instead of planning a scan and reading back the Parquet file just
// written (silver reads each bronze append, sessions each silver append).
// It is an optimisation only: what is not here is read from the files,
// and it holds nothing that the table does not (an entry is put only after
// its snapshot committed, and taken only while that snapshot is still on
// the table under the schema the rows were written in).
//
// Only the appends of tables someone follows are kept (follow: a
// consumer in this process declared it takes them), so that a table no
// query follows (sessions, the ops tables, a test or a tool writing a
// lake) costs no memory.
//
// Bounded in bytes (an append that does not fit is not kept, so that a
// consumer behind keeps finding the oldest, which it needs next) and in
// time (recentAppendTTL). Taking an entry drops the entries of the same
// table put before it: the consumer reads in commit order and has passed
// them.
type recentAppends struct {
	budget int64

	mu       sync.Mutex
	followed map[string]bool
	used     int64
	seq      uint64
	entries  map[recentKey]*recentEntry
}

type recentKey struct {
	ident    string
	snapshot int64
}

type recentEntry struct {
	seq      uint64
	schemaID int
	recs     []arrow.RecordBatch // one reference each, owned by the entry
	bytes    int64
	at       time.Time
}

func newRecentAppends(budget int64) *recentAppends {
	return &recentAppends{budget: budget, followed: map[string]bool{}, entries: map[recentKey]*recentEntry{}}
}

// follow makes put keep ident's appends from now on.
func (c *recentAppends) follow(ident string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.followed[ident] = true
	c.mu.Unlock()
}

// put keeps recs (taking over the caller's reference to each) as the rows
// of ident's snapshot, written in schema schemaID; it releases them when
// they do not fit.
func (c *recentAppends) put(ident string, snapshot int64, schemaID int, recs []arrow.RecordBatch, bytes int64) {
	if c == nil || c.budget <= 0 || len(recs) == 0 {
		releaseAll(recs)
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if now.Sub(e.at) > recentAppendTTL {
			c.dropLocked(k, e)
		}
	}
	if !c.followed[ident] || c.used+bytes > c.budget {
		releaseAll(recs)
		return
	}
	c.seq++
	c.entries[recentKey{ident, snapshot}] = &recentEntry{seq: c.seq, schemaID: schemaID, recs: recs, bytes: bytes, at: now}
	c.used += bytes
}

// take hands over the rows of ident's snapshot if they are kept and were
// written in schemaID, and drops the entries of ident put before them.
func (c *recentAppends) take(ident string, snapshot int64, schemaID int) ([]arrow.RecordBatch, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := recentKey{ident, snapshot}
	e, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	for ok2, o := range c.entries {
		if ok2.ident == ident && o.seq < e.seq {
			c.dropLocked(ok2, o)
		}
	}
	delete(c.entries, k)
	c.used -= e.bytes
	if e.schemaID != schemaID {
		releaseAll(e.recs)
		return nil, false
	}
	return e.recs, true
}

func (c *recentAppends) dropLocked(k recentKey, e *recentEntry) {
	delete(c.entries, k)
	c.used -= e.bytes
	releaseAll(e.recs)
}

// close releases everything kept.
func (c *recentAppends) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		c.dropLocked(k, e)
	}
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func retainAll(recs []arrow.RecordBatch) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, len(recs))
	for i, r := range recs {
		r.Retain()
		out[i] = r
	}
	return out
}

// FollowAppends declares that a consumer in this process takes ident's
// appends with TakeAppended: from now on the Lake keeps the rows of the
// appends to ident it commits, within Config.RecentAppendBytes and a
// minute. Appends to a table nobody follows are not kept.
func (l *Lake) FollowAppends(ident string) { l.recent.follow(ident) }

// TakeAppended returns the rows added by append snapshot snapshotID of
// ident, as ReadAppended does (the table's current schema, the caller
// releases them), for the one consumer that reads ident's appends in
// order: when this Lake committed the snapshot moments ago it hands over
// the rows it wrote, without reading the files (and forgets them, and
// those of earlier snapshots of ident it still kept); otherwise it reads
// the files. Within one append the rows come in the order they were
// committed; ReadAppended returns them file by file, so an append split
// over several partitions may come in another order from the files.
// Verification reads with ReadAppended: the files are the source of truth.
// A take follows ident (FollowAppends) if it was not followed yet.
func (l *Lake) TakeAppended(ctx context.Context, ident string, snapshotID int64) ([]arrow.RecordBatch, error) {
	l.recent.follow(ident)
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return nil, err
	}
	if tbl.SnapshotByID(snapshotID) == nil {
		return nil, fmt.Errorf("read snapshot %d of %s: %w", snapshotID, ident, ErrSnapshotNotFound)
	}
	if recs, ok := l.recent.take(ident, snapshotID, tbl.Schema().ID); ok {
		out, err := asScanned(tbl, recs)
		releaseAll(recs)
		if err == nil {
			return out, nil
		}
	}
	return l.readAppended(ctx, ident, tbl, snapshotID)
}

// asScanned rebinds recs (in the table's Arrow schema with field ids, as
// CommitBatch wrote them) to the schema a scan of tbl returns. The result
// holds its own references.
func asScanned(tbl *icetable.Table, recs []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	sc, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return nil, fmt.Errorf("scan arrow schema: %w", err)
	}
	out := make([]arrow.RecordBatch, 0, len(recs))
	for _, r := range recs {
		if err := matchSchema(sc, r); err != nil {
			releaseAll(out)
			return nil, errors.Join(errors.New("kept rows do not match the scan schema"), err)
		}
		out = append(out, array.NewRecordBatch(sc, r.Columns(), r.NumRows()))
	}
	return out, nil
}
