package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/broker"
	"lakehouse/internal/progress"
	"lakehouse/internal/recentchange"
	"lakehouse/table"
)

// Query names whose table markers the verifier reads: bronze's (its last
// batch's end offsets) and silver's (the bronze snapshot it has read up
// to). They are stream/bronze's and stream/silver's QueryName.
const (
	bronzeQuery = "bronze"
	silverQuery = "silver"
)

// noTime marks "no event time" (Unix microseconds), as stream.NoTime.
const noTime = math.MinInt64

// bronzeCols are the bronze columns the verifier reads: never key.
var bronzeCols = []string{"broker_partition", "broker_offset", "broker_ts", "value", "ingest_ts"}

// bronzeBatch reads those columns of one batch by name.
type bronzeBatch struct {
	part   *array.Int32
	off    *array.Int64
	ts     *array.Timestamp
	tsUnit arrow.TimeUnit
	val    *array.String
	ing    *array.Timestamp
	inUnit arrow.TimeUnit
}

func bronzeBatchOf(rec arrow.RecordBatch) (bronzeBatch, error) {
	var r bronzeBatch
	var err error
	if r.part, err = column[*array.Int32](rec, "broker_partition"); err != nil {
		return r, err
	}
	if r.off, err = column[*array.Int64](rec, "broker_offset"); err != nil {
		return r, err
	}
	if r.ts, r.tsUnit, err = timeColumn(rec, "broker_ts"); err != nil {
		return r, err
	}
	if r.val, err = column[*array.String](rec, "value"); err != nil {
		return r, err
	}
	if r.ing, r.inUnit, err = timeColumn(rec, "ingest_ts"); err != nil {
		return r, err
	}
	return r, nil
}

func timeColumn(rec arrow.RecordBatch, name string) (*array.Timestamp, arrow.TimeUnit, error) {
	col, err := column[*array.Timestamp](rec, name)
	if err != nil {
		return nil, 0, err
	}
	return col, col.DataType().(*arrow.TimestampType).Unit, nil
}

// received is broker_ts of row i (zero when null), as silver reads it.
func (r bronzeBatch) received(i int) time.Time {
	if r.ts.IsNull(i) {
		return time.Time{}
	}
	return r.ts.Value(i).ToTime(r.tsUnit)
}

// ingest is ingest_ts of row i in Unix microseconds: one value per bronze
// batch, stamped when the batch was read from the broker.
func (r bronzeBatch) ingest(i int) int64 {
	if r.ing.IsNull(i) {
		return noTime
	}
	return r.ing.Value(i).ToTime(r.inUnit).UnixMicro()
}

// edit parses row i's value with silver's parser: ok for an edit or new
// event silver would store.
func (r bronzeBatch) edit(i int, maxAhead time.Duration) (recentchange.Edit, bool) {
	e, err := recentchange.ParseEdit([]byte(r.val.Value(i)), r.received(i), maxAhead)
	return e, err == nil
}

// bronzeScan is what the first pass over bronze gathers: the offsets per
// partition (bitmaps, not maps), the newest event time of each bronze batch
// and the hashes of every edit/new id bronze holds.
type bronzeScan struct {
	offs    []broker.PartitionOffsets
	bits    []*offsetBits
	rows    []int64         // rows per partition of the broker
	dups    []int64         // rows beyond the first of an offset, per partition
	foreign []map[int64]int // offsets beyond the broker's end (an anomaly), per partition
	other   map[int32]int64 // rows of partitions the broker does not have
	total   int64           // bronze rows
	newest  map[int64]int64 // ingest_ts -> newest edit event time of that bronze batch
	edits   idSet           // hashes of every edit/new event id in bronze
	marker  ends            // bronze's last committed batch's end offsets (empty: none)
	held    heldOffsets     // the offsets the broker holds (nil: all of Start..End-1)
	unknown int64           // rows without ingest_ts: no batch to order them by
}

// scanBronze is the first pass over bronze.
func scanBronze(ctx context.Context, lake *table.Lake, offs []broker.PartitionOffsets, held heldOffsets, exp Expect, h idHasher, bar *progress.Reporter) (*bronzeScan, error) {
	bar.SetNote("bronze")
	s := &bronzeScan{offs: offs, held: held, bits: make([]*offsetBits, len(offs)), rows: make([]int64, len(offs)),
		dups: make([]int64, len(offs)), foreign: make([]map[int64]int, len(offs)), newest: map[int64]int64{},
		edits: make(idSet, 0, tableRows(ctx, lake, table.Bronze))}
	for p, o := range offs {
		s.bits[p] = newOffsetBits(o.End)
	}
	var err error
	if s.marker, err = markerEnds(ctx, lake); err != nil {
		return nil, err
	}
	err = lake.ScanColumns(ctx, table.Bronze, bronzeCols, func(rec arrow.RecordBatch) error {
		r, err := bronzeBatchOf(rec)
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			s.offset(r.part.Value(i), r.off.Value(i))
			e, ok := r.edit(i, exp.MaxEventAhead)
			if !ok {
				continue
			}
			s.edits = append(s.edits, h.sum(e.ID))
			k := r.ingest(i)
			if k == noTime {
				s.unknown++
				continue
			}
			if t, seen := s.newest[k]; !seen || e.EventTime > t {
				s.newest[k] = e.EventTime
			}
		}
		bar.Add(rec.NumRows())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan bronze: %w", err)
	}
	s.edits.sortUniq()
	return s, nil
}

func (s *bronzeScan) offset(p int32, off int64) {
	s.total++
	if p < 0 || int(p) >= len(s.bits) {
		if s.other == nil {
			s.other = map[int32]int64{}
		}
		s.other[p]++
		return
	}
	s.rows[p]++
	in, again := s.bits[p].add(off)
	if !in {
		if s.foreign[p] == nil {
			s.foreign[p] = map[int64]int{}
		}
		if s.foreign[p][off]++; s.foreign[p][off] > 1 {
			s.dups[p]++
		}
		return
	}
	if again {
		s.dups[p]++
	}
}

// settle re-reads the topic's ends after the scan: offsets bronze holds
// beyond the ends read before it but below the new ones were appended and
// committed while verify read, and are left out of its counts, as every
// offset after the cut is; only those beyond the new ends are foreign.
func (s *bronzeScan) settle(ctx context.Context, log broker.Log, topic string) error {
	if !s.anyForeign() {
		return nil
	}
	now, err := log.Offsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("read broker offsets again: %w", err)
	}
	for p, f := range s.foreign {
		if p >= len(now) {
			continue
		}
		for off, n := range f {
			if off < now[p].End {
				s.total -= int64(n)
				s.rows[p] -= int64(n)
				s.dups[p] -= int64(n - 1)
				delete(f, off)
			}
		}
	}
	return nil
}

func (s *bronzeScan) anyForeign() bool {
	for _, f := range s.foreign {
		if len(f) > 0 {
			return true
		}
	}
	return false
}

// markerEnds is bronze's marker: the end offsets of its last committed
// batch.
func markerEnds(ctx context.Context, lake *table.Lake) (ends, error) {
	m, ok, err := lake.LastCommitted(ctx, table.Bronze, bronzeQuery)
	if err != nil {
		return nil, fmt.Errorf("read bronze marker: %w", err)
	}
	if !ok {
		return ends{}, nil
	}
	return parseEnds(m.Offsets)
}

// ends are end offsets by partition.
type ends map[int]int64

// parseEnds decodes bronze's offsets ({"0":10,"1":7}, stream.NextOffsets).
func parseEnds(s string) (ends, error) {
	var m map[string]int64
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode bronze offsets %q: %w", s, err)
	}
	out := ends{}
	for k, v := range m {
		p, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("decode bronze offsets %q: partition %q: %w", s, k, err)
		}
		out[p] = v
	}
	return out, nil
}

// counts fills the bronze counts of r. Bronze's batches are contiguous
// prefixes of each partition, so every offset below the highest one bronze
// holds (or its marker's end, if higher) must be there; those above it are
// pending: bronze has not read them yet.
func (s *bronzeScan) counts(r *Report) {
	r.Counts.Bronze = s.total
	for p, o := range s.offs {
		b := s.bits[p]
		pc := PartitionCounts{Partition: p, BrokerStart: o.Start, BrokerEnd: o.End,
			BronzeRows: s.rows[p], BronzeDistinct: b.distinct() + int64(len(s.foreign[p])), DuplicateCount: s.dups[p]}
		r.Counts.Broker += s.held.count(p, o.Start, o.End)
		if s.held == nil {
			// Dense offsets from 0: those below Start are the trimmed
			// records. A sparse log cannot tell how many it trimmed.
			r.Counts.BrokerTrimmed += o.Trimmed()
		}
		read := max(b.high()+1, s.marker[p], o.Start)
		read = min(read, o.End)
		// Offsets trimmed by broker retention before the verifier ran are
		// not expected: bronze may hold them, the broker no longer does.
		// Nor are offsets that hold no record (a sparse log's markers).
		pc.MissingCount, pc.Gaps = s.held.absent(p, b, o.Start, read, maxListed)
		pc.Pending = s.held.count(p, read, o.End)
		pc.Duplicates = b.repeated(maxListed)
		for off, n := range s.foreign[p] {
			pc.Foreign = append(pc.Foreign, off)
			if n > 1 {
				pc.Duplicates = append(pc.Duplicates, off)
			}
		}
		sortCap(&pc.Duplicates)
		pc.ForeignCount = int64(len(pc.Foreign))
		sortCap(&pc.Foreign)
		r.Counts.BronzeDistinct += pc.BronzeDistinct
		r.Counts.Pending += pc.Pending
		r.Counts.Partitions = append(r.Counts.Partitions, pc)
	}
	var other []int32
	for p := range s.other {
		other = append(other, p)
	}
	sort.Slice(other, func(i, j int) bool { return other[i] < other[j] })
	for _, p := range other {
		r.Counts.Partitions = append(r.Counts.Partitions, PartitionCounts{Partition: int(p), BronzeRows: s.other[p], BronzeDistinct: -1})
	}
}

// onTime gives, for a bronze batch (its ingest_ts), the newest event time
// of the bronze batches before it minus the watermark delay: an upper bound
// of the watermark silver applied to its rows (silver's watermark of a
// batch comes from the silver batches before it, which read only earlier
// bronze batches). An edit at or after it is on time whatever silver's
// batching was.
type onTime struct {
	keys   []int64 // ingest_ts of the bronze batches, ascending
	before []int64 // newest event time of the batches before keys[i] (noTime: none)
	delay  int64   // µs
}

func newOnTime(newest map[int64]int64, delay time.Duration) onTime {
	o := onTime{delay: delay.Microseconds()}
	for k := range newest {
		o.keys = append(o.keys, k)
	}
	sort.Slice(o.keys, func(i, j int) bool { return o.keys[i] < o.keys[j] })
	run := int64(noTime)
	for _, k := range o.keys {
		o.before = append(o.before, run)
		run = max(run, newest[k])
	}
	return o
}

// expected reports whether an edit of event time t (µs) in the bronze
// batch stamped ingest is on time.
func (o onTime) expected(ingest, t int64) bool {
	i := sort.Search(len(o.keys), func(i int) bool { return o.keys[i] >= ingest })
	if i == len(o.keys) || o.keys[i] != ingest {
		return false // a row without ingest_ts, or not seen in the first pass: cannot tell
	}
	b := o.before[i]
	if b == noTime || b < math.MinInt64+o.delay {
		return true // no watermark yet
	}
	return t >= b-o.delay
}

// silverReadTo is how far silver has read bronze: the end offsets of the
// bronze batch whose snapshot silver's marker names ({"snapshot":ID}).
// ok is false when silver has read nothing. Maintenance never expires the
// snapshot a downstream query's next read starts from, so the snapshot is
// still in bronze's history.
func silverReadTo(ctx context.Context, lake *table.Lake) (to ends, ok bool, err error) {
	m, ok, err := lake.LastCommitted(ctx, table.SilverEdits, silverQuery)
	if err != nil {
		return nil, false, fmt.Errorf("read silver marker: %w", err)
	}
	if !ok {
		return nil, false, nil
	}
	var pos struct {
		Snapshot int64 `json:"snapshot"`
	}
	if err := json.Unmarshal([]byte(m.Offsets), &pos); err != nil {
		return nil, false, fmt.Errorf("decode silver marker offsets %q: %w", m.Offsets, err)
	}
	if pos.Snapshot == 0 {
		return nil, false, nil
	}
	snaps, err := lake.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		return nil, false, fmt.Errorf("list bronze snapshots: %w", err)
	}
	for _, sn := range snaps {
		if sn.ID == pos.Snapshot {
			to, err := parseEnds(sn.Summary[table.SummaryOffsets])
			if err != nil {
				return nil, false, fmt.Errorf("bronze snapshot %d silver read to: %w", sn.ID, err)
			}
			return to, true, nil
		}
	}
	return nil, false, fmt.Errorf("silver has read bronze up to snapshot %d, which is not among bronze's appends: %w", pos.Snapshot, errSilverPosition)
}

// errSilverPosition: silver's marker names a bronze snapshot that is gone.
var errSilverPosition = errors.New("cannot tell which bronze rows silver has read")
