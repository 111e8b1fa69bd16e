package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/broker"
	"lakehouse/internal/progress"
	"lakehouse/table"
)

// Topic names the verifier reads.
const (
	DefaultTopic    = "recentchange"
	DefaultDLQTopic = "recentchange.dlq"
)

// maxListed bounds the gaps, duplicates and late ids a report lists.
const maxListed = 20

// progressDelay: a verify that reads the tables in less shows no progress.
const progressDelay = 2 * time.Second

// Expect holds the expectations; a negative count is not checked.
type Expect struct {
	Topic    string // default DefaultTopic
	DLQTopic string // default DefaultDLQTopic
	Messages int64  // messages in the topic
	Silver   int64  // rows (== distinct event ids) in silver.edits
	DLQ      int64  // messages in the dead-letter topic
	// LateIDs are event ids published too late for the watermark: none of
	// them may be in silver.
	LateIDs []string
}

// NoExpectations checks only the invariants that need no scenario: bronze
// against the broker, unique event ids in silver.
func NoExpectations() Expect { return Expect{Messages: -1, Silver: -1, DLQ: -1} }

// PartitionCounts is one partition seen from the broker and from bronze.
type PartitionCounts struct {
	Partition      int     `json:"partition"`
	BrokerStart    int64   `json:"broker_start"`
	BrokerEnd      int64   `json:"broker_end"`
	BronzeRows     int64   `json:"bronze_rows"`
	BronzeDistinct int64   `json:"bronze_distinct"`
	Gaps           []int64 `json:"gaps,omitempty"`       // offsets in the broker's range missing from bronze (first maxListed)
	Duplicates     []int64 `json:"duplicates,omitempty"` // offsets present more than once (first maxListed)
	Foreign        []int64 `json:"foreign,omitempty"`    // offsets in bronze beyond the broker's end (first maxListed)
	MissingCount   int64   `json:"missing"`
	DuplicateCount int64   `json:"duplicated"`
}

// Counts is what the verifier observed: the `--counts-only` line.
type Counts struct {
	Broker         int64             `json:"broker"`
	DLQ            int64             `json:"dlq"`
	Bronze         int64             `json:"bronze"`
	BronzeDistinct int64             `json:"bronze_distinct"`
	Silver         int64             `json:"silver"`
	SilverDistinct int64             `json:"silver_distinct"`
	LateInSilver   int64             `json:"late_in_silver"`
	BronzeCommits  int64             `json:"bronze_commits"`
	Partitions     []PartitionCounts `json:"partitions"`
}

// Check is one named verdict.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Report is the verifier's result.
type Report struct {
	Counts Counts  `json:"counts"`
	Checks []Check `json:"checks"`
	// DuplicateIDs and LateIDs list offending silver event ids (first maxListed).
	DuplicateIDs []string `json:"duplicate_ids,omitempty"`
	LateIDs      []string `json:"late_ids,omitempty"`
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Failed returns the checks that failed.
func (r Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// FailedNames returns the names of the checks that failed, in order.
func (r Report) FailedNames() []string {
	var out []string
	for _, c := range r.Failed() {
		out = append(out, c.Name)
	}
	return out
}

// CountsJSON is the one-line JSON form of the counts.
func (r Report) CountsJSON() string {
	b, _ := json.Marshal(r.Counts)
	return string(b)
}

// ErrFailed is returned (wrapped) by Run when any check fails.
var ErrFailed = errors.New("verify: checks failed")

// Run reads the broker and the tables and checks them against exp. It
// returns the report and, if any check failed, an error wrapping ErrFailed.
// While it reads bronze and silver it shows the rows read on show, out of
// the tables' row counts in their metadata, once the reading has taken two
// seconds (the zero Display: nowhere).
func Run(ctx context.Context, log broker.Log, lake *table.Lake, exp Expect, show progress.Display) (Report, error) {
	if exp.Topic == "" {
		exp.Topic = DefaultTopic
	}
	if exp.DLQTopic == "" {
		exp.DLQTopic = DefaultDLQTopic
	}
	var r Report
	offs, err := log.Offsets(ctx, exp.Topic)
	if err != nil {
		return r, fmt.Errorf("read broker offsets: %w", err)
	}
	if dlq, err := log.Offsets(ctx, exp.DLQTopic); err == nil {
		for _, o := range dlq {
			r.Counts.DLQ += o.End - o.Start
		}
	} else if !errors.Is(err, broker.ErrUnknownTopic) {
		return r, fmt.Errorf("read dead-letter offsets: %w", err)
	}
	bar := show.Start(progress.Task{Label: "verify: read", Total: rowsToRead(ctx, lake), Unit: "rows", Delay: progressDelay})
	defer bar.Finish()
	if err := r.bronze(ctx, lake, offs, bar); err != nil {
		return r, err
	}
	if err := r.silver(ctx, lake, exp.LateIDs, bar); err != nil {
		return r, err
	}
	bar.SetNote("bronze and silver")
	bar.Finish()
	if r.Counts.BronzeCommits, err = bronzeCommits(ctx, lake); err != nil {
		return r, err
	}
	r.judge(exp, offs)
	if !r.OK() {
		return r, fmt.Errorf("%w: %s", ErrFailed, strings.Join(r.FailedNames(), ", "))
	}
	return r, nil
}

// rowsToRead is the live rows of bronze and silver as their metadata
// counts them (progress.Unknown when it does not say).
func rowsToRead(ctx context.Context, lake *table.Lake) int64 {
	var n int64
	for _, ident := range []string{table.Bronze, table.SilverEdits} {
		st, err := lake.Stats(ctx, ident)
		if err != nil {
			return progress.Unknown
		}
		n += st.Records
	}
	if n == 0 {
		return progress.Unknown
	}
	return n
}

func (r *Report) bronze(ctx context.Context, lake *table.Lake, offs []broker.PartitionOffsets, bar *progress.Reporter) error {
	bar.SetNote("bronze")
	seen := make([]map[int64]int, len(offs))
	for i := range seen {
		seen[i] = map[int64]int{}
	}
	var other map[int32]int64
	err := lake.ScanEach(ctx, table.Bronze, func(rec arrow.RecordBatch) error {
		pc, err := column[*array.Int32](rec, "broker_partition")
		if err != nil {
			return err
		}
		oc, err := column[*array.Int64](rec, "broker_offset")
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			p := pc.Value(i)
			r.Counts.Bronze++
			if int(p) >= len(seen) || p < 0 {
				if other == nil {
					other = map[int32]int64{}
				}
				other[p]++
				continue
			}
			seen[p][oc.Value(i)]++
		}
		bar.Add(rec.NumRows())
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan bronze: %w", err)
	}
	for p, o := range offs {
		pcnt := PartitionCounts{Partition: p, BrokerStart: o.Start, BrokerEnd: o.End}
		r.Counts.Broker += o.End - o.Start
		for off, n := range seen[p] {
			pcnt.BronzeRows += int64(n)
			pcnt.BronzeDistinct++
			if n > 1 {
				pcnt.DuplicateCount += int64(n - 1)
				pcnt.Duplicates = append(pcnt.Duplicates, off)
			}
			if off >= o.End || off < 0 {
				pcnt.Foreign = append(pcnt.Foreign, off)
			}
		}
		// Offsets trimmed by broker retention before the verifier ran are
		// not expected to be missing: bronze may hold them, the broker no
		// longer does. Every offset in [Start, End) must be in bronze.
		for off := o.Start; off < o.End; off++ {
			if seen[p][off] == 0 {
				pcnt.MissingCount++
				if len(pcnt.Gaps) < maxListed {
					pcnt.Gaps = append(pcnt.Gaps, off)
				}
			}
		}
		sortCap(&pcnt.Duplicates)
		sortCap(&pcnt.Foreign)
		r.Counts.BronzeDistinct += pcnt.BronzeDistinct
		r.Counts.Partitions = append(r.Counts.Partitions, pcnt)
	}
	for p, n := range other {
		r.Counts.Partitions = append(r.Counts.Partitions, PartitionCounts{Partition: int(p), BronzeRows: n, BronzeDistinct: -1})
	}
	return nil
}

func (r *Report) silver(ctx context.Context, lake *table.Lake, lateIDs []string, bar *progress.Reporter) error {
	bar.SetNote("silver")
	late := make(map[string]bool, len(lateIDs))
	for _, id := range lateIDs {
		late[id] = true
	}
	ids := map[string]int{}
	err := lake.ScanEach(ctx, table.SilverEdits, func(rec arrow.RecordBatch) error {
		ic, err := column[*array.String](rec, "event_id")
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			id := ic.Value(i) // points into rec, released after this call
			r.Counts.Silver++
			if n, ok := ids[id]; ok {
				ids[id] = n + 1
			} else {
				ids[strings.Clone(id)] = 1
			}
			if late[id] {
				r.Counts.LateInSilver++
				if len(r.LateIDs) < maxListed {
					r.LateIDs = append(r.LateIDs, strings.Clone(id))
				}
			}
		}
		bar.Add(rec.NumRows())
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan silver: %w", err)
	}
	r.Counts.SilverDistinct = int64(len(ids))
	for id, n := range ids {
		if n > 1 {
			r.DuplicateIDs = append(r.DuplicateIDs, id)
		}
	}
	sort.Strings(r.DuplicateIDs)
	if len(r.DuplicateIDs) > maxListed {
		r.DuplicateIDs = r.DuplicateIDs[:maxListed]
	}
	return nil
}

func bronzeCommits(ctx context.Context, lake *table.Lake) (int64, error) {
	snaps, err := lake.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		return 0, fmt.Errorf("list bronze snapshots: %w", err)
	}
	return int64(len(snaps)), nil
}

func (r *Report) judge(exp Expect, offs []broker.PartitionOffsets) {
	c := r.Counts
	add := func(name string, ok bool, format string, args ...any) {
		r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	if exp.Messages >= 0 {
		add("topic-messages", c.Broker == exp.Messages, "broker %d, expected %d", c.Broker, exp.Messages)
	}
	var missing, dups, foreign int64
	var detail []string
	for _, p := range c.Partitions {
		missing += p.MissingCount
		dups += p.DuplicateCount
		foreign += int64(len(p.Foreign))
		if p.MissingCount > 0 || p.DuplicateCount > 0 || len(p.Foreign) > 0 || p.BronzeDistinct < 0 {
			detail = append(detail, fmt.Sprintf("partition %d: %d missing %v, %d duplicated %v, beyond end %v",
				p.Partition, p.MissingCount, p.Gaps, p.DuplicateCount, p.Duplicates, p.Foreign))
		}
	}
	okBronze := missing == 0 && dups == 0 && foreign == 0 && c.Bronze == c.BronzeDistinct
	// With no broker retention, bronze rows equal the broker's messages.
	retained := true
	for _, o := range offs {
		if o.Start != 0 {
			retained = false
		}
	}
	if retained {
		okBronze = okBronze && c.Bronze == c.Broker
	}
	add("bronze-offsets", okBronze, "bronze %d rows, %d distinct offsets, broker %d; %s",
		c.Bronze, c.BronzeDistinct, c.Broker, orNone(detail))
	okSilver := c.Silver == c.SilverDistinct
	if exp.Silver >= 0 {
		okSilver = okSilver && c.Silver == exp.Silver
		add("silver-events", okSilver, "silver %d rows, %d distinct ids, expected %d; duplicated ids %v",
			c.Silver, c.SilverDistinct, exp.Silver, r.DuplicateIDs)
	} else {
		add("silver-unique", okSilver, "silver %d rows, %d distinct ids; duplicated ids %v", c.Silver, c.SilverDistinct, r.DuplicateIDs)
	}
	if len(exp.LateIDs) > 0 {
		add("late-not-in-silver", c.LateInSilver == 0, "%d of %d late events in silver %v", c.LateInSilver, len(exp.LateIDs), r.LateIDs)
	}
	if exp.DLQ >= 0 {
		add("dlq", c.DLQ == exp.DLQ, "dead-letter topic %d, expected %d", c.DLQ, exp.DLQ)
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no gaps, no duplicates"
	}
	return strings.Join(s, "; ")
}

func sortCap(s *[]int64) {
	sort.Slice(*s, func(i, j int) bool { return (*s)[i] < (*s)[j] })
	if len(*s) > maxListed {
		*s = (*s)[:maxListed]
	}
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// column returns the named column of rec as type T.
func column[T arrow.Array](rec arrow.RecordBatch, name string) (T, error) {
	var zero T
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return zero, fmt.Errorf("column %q not in %v", name, rec.Schema())
	}
	col, ok := rec.Column(idx[0]).(T)
	if !ok {
		return zero, fmt.Errorf("column %q is %s, not %T", name, rec.Column(idx[0]).DataType(), zero)
	}
	return col, nil
}
