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

	"lakehouse/broker"
	"lakehouse/internal/fault"
	"lakehouse/internal/progress"
	"lakehouse/internal/recentchange"
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

// Defaults of Expect's zero fields: run's defaults.
const (
	// DefaultWatermarkDelay is silver's (stream/silver DefaultWatermarkDelay).
	DefaultWatermarkDelay = 10 * time.Minute
)

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
	// AllowPending accepts what the pipeline has not read yet: broker
	// offsets above bronze's last batch, bronze rows after silver's last
	// batch. They are counted and shown either way; false (a scenario that
	// drained the pipeline before verifying) fails bronze-offsets and
	// silver-complete when anything is pending.
	AllowPending bool
	// WatermarkDelay is silver's watermark delay, which decides which
	// bronze events silver must hold (DefaultWatermarkDelay). Give it run's
	// --watermark.
	WatermarkDelay time.Duration
	// MaxEventAhead is the event-time margin silver parses bronze with
	// (recentchange.DefaultMaxAhead). Give it run's --max-event-ahead.
	MaxEventAhead time.Duration
}

// NoExpectations checks only the invariants that need no scenario: bronze
// against the broker, silver against bronze (unique ids, none missing,
// none extra), with whatever the pipeline has not read yet pending rather
// than failed.
func NoExpectations() Expect { return Expect{Messages: -1, Silver: -1, DLQ: -1, AllowPending: true} }

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
	ForeignCount   int64   `json:"foreign_count,omitempty"` // distinct offsets beyond the broker's end
	// Pending is the broker's offsets above what bronze holds (its highest
	// offset, or its marker's end if higher): not read yet, not missing.
	Pending int64 `json:"pending"`
}

// Counts is what the verifier observed: the `--counts-only` line.
type Counts struct {
	Broker         int64             `json:"broker"`                   // messages the broker holds
	BrokerTrimmed  int64             `json:"broker_trimmed,omitempty"` // messages retention trimmed before
	DLQ            int64             `json:"dlq"`
	Bronze         int64             `json:"bronze"`
	BronzeDistinct int64             `json:"bronze_distinct"`
	Silver         int64             `json:"silver"`
	SilverDistinct int64             `json:"silver_distinct"`
	LateInSilver   int64             `json:"late_in_silver"`
	BronzeCommits  int64             `json:"bronze_commits"`
	Partitions     []PartitionCounts `json:"partitions"`
	// Pending is the broker messages bronze has not read yet (the sum of
	// the partitions' Pending).
	Pending int64 `json:"pending"`
	// SilverExpected is the distinct edit/new ids of bronze that silver
	// must hold: on time and in a bronze batch silver has read.
	SilverExpected int64 `json:"silver_expected"`
	// SilverMissing is the expected ids not in silver; SilverExtra the
	// silver ids that are no edit/new event of bronze.
	SilverMissing int64 `json:"silver_missing"`
	SilverExtra   int64 `json:"silver_extra"`
	// SilverPending is the bronze rows of batches silver has not read yet.
	SilverPending int64 `json:"silver_pending"`
	// DLQTable is bronze.recentchange_dlq against the dead-letter topic.
	DLQTable DLQCounts `json:"dlq_table"`
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
	// MissingIDs are expected ids silver lacks, ExtraIDs silver ids bronze
	// lacks (up to maxListed each).
	MissingIDs []string `json:"missing_ids,omitempty"`
	ExtraIDs   []string `json:"extra_ids,omitempty"`

	silverUnknown string // why silver could not be checked against bronze
	// extraCands are the silver ids bronze's first pass lacked (sorted);
	// the second pass drops those bronze committed meanwhile. extraNames
	// holds the first maxListed of them by hash.
	extraCands idSet
	extraNames map[uint64]string
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
// hookBetweenSilverReads is where a silver commit beside verify lands
// between its two reads of silver (its position, then its rows).
var hookBetweenSilverReads = fault.Register("verify.between-silver-reads", "verify read silver's position, not yet its rows")

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
	held, err := readHeld(ctx, log, exp.Topic, offs)
	if err != nil {
		return r, err
	}
	if dlq, err := log.Offsets(ctx, exp.DLQTopic); err == nil {
		dlqHeld, err := readHeld(ctx, log, exp.DLQTopic, dlq)
		if err != nil {
			return r, err
		}
		for p, o := range dlq {
			r.Counts.DLQ += dlqHeld.count(p, o.Start, o.End)
		}
	} else if !errors.Is(err, broker.ErrUnknownTopic) {
		return r, fmt.Errorf("read dead-letter offsets: %w", err)
	}
	if exp.WatermarkDelay <= 0 {
		exp.WatermarkDelay = DefaultWatermarkDelay
	}
	if exp.MaxEventAhead <= 0 {
		exp.MaxEventAhead = recentchange.DefaultMaxAhead
	}
	bar := show.Start(progress.Task{Label: "verify: read", Total: rowsToRead(ctx, lake), Unit: "rows", Delay: progressDelay})
	defer bar.Finish()
	h := newIDHasher()
	bz, err := scanBronze(ctx, lake, offs, held, exp, h, bar)
	if err != nil {
		return r, err
	}
	// Beside a running appliance the broker and the tables move while
	// they are read: bronze may commit offsets appended after the broker's
	// ends were read (not beyond the topic: later than this verify's cut).
	if err := bz.settle(ctx, log, exp.Topic); err != nil {
		return r, err
	}
	bz.counts(&r)
	// Silver's position is read before its rows: the rows read later hold
	// at least what that position covers, never less.
	readTo, err := readSilverPosition(ctx, lake)
	if err != nil {
		return r, err
	}
	fault.Hit(hookBetweenSilverReads)
	silverIDs, err := r.scanSilver(ctx, lake, exp, h, bz, bar)
	if err != nil {
		return r, err
	}
	bz.edits = nil // no longer needed: free it before the second pass
	if err := r.complete(ctx, lake, exp, h, bz, silverIDs, readTo, bar); err != nil {
		return r, err
	}
	bar.SetNote("bronze and silver")
	bar.Finish()
	if r.Counts.BronzeCommits, err = bronzeCommits(ctx, lake); err != nil {
		return r, err
	}
	if r.Counts.DLQTable, err = scanDLQ(ctx, log, lake, exp.DLQTopic); err != nil {
		return r, err
	}
	r.judge(exp, offs)
	if !r.OK() {
		return r, fmt.Errorf("%w: %s", ErrFailed, strings.Join(r.FailedNames(), ", "))
	}
	return r, nil
}

// rowsToRead is the rows Run reads, from the live rows of bronze (read
// twice) and silver as their metadata counts them (progress.Unknown when
// it does not say).
func rowsToRead(ctx context.Context, lake *table.Lake) int64 {
	var n int64
	for _, ident := range []string{table.Bronze, table.Bronze, table.SilverEdits} {
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
		trimmed := ""
		if c.BrokerTrimmed > 0 {
			trimmed = fmt.Sprintf(" (%d held, %d trimmed by retention)", c.Broker, c.BrokerTrimmed)
		}
		add("topic-messages", c.Broker+c.BrokerTrimmed == exp.Messages, "broker %d%s, expected %d", c.Broker+c.BrokerTrimmed, trimmed, exp.Messages)
	}
	var missing, dups, foreign int64
	var detail []string
	for _, p := range c.Partitions {
		missing += p.MissingCount
		dups += p.DuplicateCount
		foreign += p.ForeignCount
		if p.MissingCount > 0 || p.DuplicateCount > 0 || p.ForeignCount > 0 || p.BronzeDistinct < 0 {
			detail = append(detail, fmt.Sprintf("partition %d: %d missing %v, %d duplicated %v, beyond end %v",
				p.Partition, p.MissingCount, p.Gaps, p.DuplicateCount, p.Duplicates, p.Foreign))
		}
	}
	okBronze := missing == 0 && dups == 0 && foreign == 0 && c.Bronze == c.BronzeDistinct
	if !exp.AllowPending {
		okBronze = okBronze && c.Pending == 0
	}
	// With no broker retention, bronze rows and pending offsets are the
	// broker's messages.
	retained := true
	for _, o := range offs {
		if o.Start != 0 {
			retained = false
		}
	}
	if retained {
		okBronze = okBronze && c.Bronze+c.Pending == c.Broker
	}
	add("bronze-offsets", okBronze, "bronze %d rows, %d distinct offsets, broker %d, %s; %s",
		c.Bronze, c.BronzeDistinct, c.Broker, pendingText(c.Pending, "offsets bronze has not read yet", exp.AllowPending), orNone(detail))
	okSilver := c.Silver == c.SilverDistinct
	if exp.Silver >= 0 {
		okSilver = okSilver && c.Silver == exp.Silver
		add("silver-events", okSilver, "silver %d rows, %d distinct ids, expected %d; duplicated ids %v",
			c.Silver, c.SilverDistinct, exp.Silver, r.DuplicateIDs)
	} else {
		add("silver-unique", okSilver, "silver %d rows, %d distinct ids; duplicated ids %v", c.Silver, c.SilverDistinct, r.DuplicateIDs)
	}
	okComplete := r.silverUnknown == "" && c.SilverMissing == 0 && c.SilverExtra == 0 &&
		(exp.AllowPending || c.SilverPending == 0)
	if r.silverUnknown != "" {
		add("silver-complete", false, "%s", r.silverUnknown)
	} else {
		add("silver-complete", okComplete, "silver holds %d of %d expected ids (on time, watermark delay %s); %d missing %v; %d extra (no edit/new event of bronze) %v; %s",
			c.SilverExpected-c.SilverMissing, c.SilverExpected, exp.WatermarkDelay, c.SilverMissing, r.MissingIDs,
			c.SilverExtra, r.ExtraIDs, pendingText(c.SilverPending, "bronze rows silver has not read yet", exp.AllowPending))
	}
	if len(exp.LateIDs) > 0 {
		add("late-not-in-silver", c.LateInSilver == 0, "%d of %d late events in silver %v", c.LateInSilver, len(exp.LateIDs), r.LateIDs)
	}
	if exp.DLQ >= 0 {
		add("dlq", c.DLQ == exp.DLQ, "dead-letter topic %d, expected %d", c.DLQ, exp.DLQ)
	}
	d := c.DLQTable
	okDLQ := d.Missing == 0 && d.Dups == 0 && d.Foreign == 0 && (exp.AllowPending || d.Pending == 0)
	add("dlq-table", okDLQ, "%s %d rows, %d distinct offsets; %d missing %v, %d duplicated %v, %d beyond the topic; %s",
		table.BronzeDLQ, d.Rows, d.Distinct, d.Missing, d.Gaps, d.Dups, d.Repeated, d.Foreign,
		pendingText(d.Pending, "dead letters the dlq query has not read yet", exp.AllowPending))
}

// pendingText says what is pending and, when a drained pipeline was
// expected, that it should not be.
func pendingText(n int64, what string, allowed bool) string {
	switch {
	case n == 0:
		return "none pending"
	case allowed:
		return fmt.Sprintf("%d pending (%s)", n, what)
	}
	return fmt.Sprintf("%d pending (%s) where a drained pipeline was expected", n, what)
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
