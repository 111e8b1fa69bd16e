package stream

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/broker"
	"lakehouse/table"
)

// ErrCannotReland means missing bronze rows cannot be re-landed: the
// broker no longer holds them (trimmed by retention), or the offsets the
// present files lack do not add up to the rows the missing files held.
// Nothing was changed.
var ErrCannotReland = errors.New("cannot re-land missing bronze rows")

// OffsetRun is a run of consecutive offsets [From, To) of one partition
// (on a sparse log, such as Kafka, some of them may hold no record).
type OffsetRun struct {
	Partition int
	From, To  int64
}

// Reland is what RelandBronze found and did.
type Reland struct {
	Check    table.FileCheck
	Runs     []OffsetRun // the offsets re-landed (or that would be)
	Rows     int64
	Snapshot int64 // the replace snapshot committed (0: nothing to do)
}

// RelandBronze re-lands, from the broker, the rows of bronze data files
// that are missing from storage, exactly once: the offsets below bronze's
// marker that no present file holds (within the missing files' partition
// and offset bounds) must add up to the rows the missing files held, the
// broker must still hold all of them, and then one replace snapshot removes
// the missing files and adds their rows again (ReplaceMissing), so readers
// of bronze's appends (silver) do not read them twice. Run it with the
// appliance stopped. A second run finds nothing missing.
func RelandBronze(ctx context.Context, log broker.Log, lake *table.Lake) (Reland, error) {
	r, err := PlanReland(ctx, log, lake)
	if err != nil || len(r.Runs) == 0 {
		return r, err
	}
	src := NewBrokerSource(log, BronzeTopic, table.BronzeSchema)
	now := time.Now().UTC()
	var recs []arrow.RecordBatch
	for _, run := range r.Runs {
		rec, _, err := src.readPartition(ctx, run.Partition, run.From, run.To, now)
		if err != nil {
			release(recs)
			return r, err
		}
		recs = append(recs, rec)
	}
	if r.Snapshot, err = lake.ReplaceMissing(ctx, r.Check, recs); err != nil {
		return r, err
	}
	return r, nil
}

// PlanReland is RelandBronze without the writing: what is missing and
// which offsets would be re-landed, checked as RelandBronze checks them.
// It only reads.
func PlanReland(ctx context.Context, log broker.Log, lake *table.Lake) (Reland, error) {
	var r Reland
	check, err := lake.CheckDataFiles(ctx, table.Bronze)
	if err != nil {
		return r, err
	}
	r.Check = check
	if len(check.Missing) == 0 {
		return r, nil
	}
	m, ok, err := lake.LastCommitted(ctx, table.Bronze, BronzeQuery)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, fmt.Errorf("%w: bronze has no marker of the bronze query", ErrCannotReland)
	}
	end, err := ParsePartitionOffsets(Offset(m.Offsets))
	if err != nil {
		return r, fmt.Errorf("%w: bronze's marker: %w", ErrCannotReland, err)
	}
	cands := candidates(check.Missing, end)
	present, err := lake.ReadPresent(ctx, check, "broker_partition", "broker_offset")
	if err != nil {
		return r, err
	}
	err = markPresent(present, cands)
	for _, rec := range present {
		rec.Release()
	}
	if err != nil {
		return r, err
	}
	for _, c := range cands {
		r.Runs = append(r.Runs, c.absent()...)
	}
	offs, err := log.Offsets(ctx, BronzeTopic)
	if err != nil {
		return r, err
	}
	for _, run := range r.Runs {
		if run.Partition >= len(offs) || run.From < offs[run.Partition].Start || run.To > offs[run.Partition].End {
			return r, fmt.Errorf("%w: the broker no longer holds %s/%d offsets [%d, %d) (retention trimmed it)", ErrCannotReland, BronzeTopic, run.Partition, run.From, run.To)
		}
		// The records of the run: on Kafka some offsets hold none (a
		// transaction's marker), and no file ever held them.
		n, err := broker.CountHeld(ctx, log, BronzeTopic, offs[run.Partition], run.From, run.To)
		if err != nil {
			return r, err
		}
		r.Rows += n
	}
	if want := check.MissingRows(); r.Rows != want {
		return r, fmt.Errorf("%w: the missing files held %d rows, but %d records below bronze's marker are in no present file", ErrCannotReland, want, r.Rows)
	}
	return r, nil
}

// candidate is the offsets of one partition a missing file may have held,
// with a bit per offset set once a present file holds it.
type candidate struct {
	partition int
	from, to  int64 // [from, to)
	held      big.Int
}

func (c *candidate) absent() []OffsetRun {
	var out []OffsetRun
	for o := c.from; o < c.to; o++ {
		if c.held.Bit(int(o-c.from)) == 1 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].To == o {
			out[n-1].To++
		} else {
			out = append(out, OffsetRun{Partition: c.partition, From: o, To: o + 1})
		}
	}
	return out
}

// candidates are, per partition the missing files' bounds cover, the
// offsets from their lowest bound to bronze's end offset (from 0 and for
// every partition when a file has no bounds).
func candidates(missing []table.FileInfo, end NextOffsets) []*candidate {
	from := map[int]int64{}
	for _, f := range missing {
		plo, okp := f.Lower["broker_partition"]
		phi, okq := f.Upper["broker_partition"]
		lo, oko := f.Lower["broker_offset"]
		if !okp || !okq || !oko { // no bounds: every partition, from offset 0
			plo, phi, lo = 0, int64(maxKey(end)), 0
		}
		for p := int(plo); p <= int(phi); p++ {
			if cur, ok := from[p]; !ok || lo < cur {
				from[p] = lo
			}
		}
	}
	var out []*candidate
	for p := 0; p <= maxKey(from); p++ {
		lo, ok := from[p]
		if !ok || end[p] <= lo {
			continue
		}
		out = append(out, &candidate{partition: p, from: lo, to: end[p]})
	}
	return out
}

func maxKey(m map[int]int64) int {
	k := -1
	for p := range m {
		k = max(k, p)
	}
	return k
}

// markPresent sets the bit of every (partition, offset) of recs that a
// candidate covers.
func markPresent(recs []arrow.RecordBatch, cands []*candidate) error {
	byPart := map[int]*candidate{}
	for _, c := range cands {
		byPart[c.partition] = c
	}
	for _, rec := range recs {
		var parts *array.Int32
		var offs *array.Int64
		for i, f := range rec.Schema().Fields() {
			switch f.Name {
			case "broker_partition":
				parts, _ = rec.Column(i).(*array.Int32)
			case "broker_offset":
				offs, _ = rec.Column(i).(*array.Int64)
			}
		}
		if parts == nil || offs == nil {
			return fmt.Errorf("%w: bronze rows without broker_partition and broker_offset", ErrCannotReland)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			c := byPart[int(parts.Value(i))]
			if o := offs.Value(i); c != nil && o >= c.from && o < c.to {
				c.held.SetBit(&c.held, int(o-c.from), 1)
			}
		}
	}
	return nil
}
