// Package health turns the appliance's observation into readiness: the
// reasons it is not ready (a query that errs, stalls, falls behind, drops
// its input as late or lost its checkpoint; a failed asset check or
// refresh; ingest paused or cut off from its source; an unreadable broker
// or catalog), the warnings that do not make it unready (the disk reserve
// near, a client's odd table), and whether it progresses (what feeds the
// systemd watchdog). It logs each change once.
//
// What survives a crash: nothing; readiness is evaluated again from the
// next observation.
package health

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/table"
)

// Rules are the thresholds readiness applies.
type Rules struct {
	Every           time.Duration // how often readiness is evaluated
	StallAfter      time.Duration // input waiting and no batch for this long: stalled
	GrowingFor      time.Duration // the lag every batch leaves behind above zero and rising across this long: falling behind
	LateWindow      time.Duration // the window the late share is taken over
	LateFraction    float64       // this share of the window's input dropped as late...
	LateMinRows     int64         // ...out of at least this many rows
	IDChangeHold    time.Duration // a query-id change keeps readiness red this long after start
	DisconnectedFor time.Duration // ingest without a connection this long
}

// DefaultRules are the appliance's.
var DefaultRules = Rules{Every: 5 * time.Second, StallAfter: 2 * time.Minute, GrowingFor: 2 * time.Minute,
	LateWindow: time.Minute, LateFraction: 0.9, LateMinRows: 100, IDChangeHold: 15 * time.Minute, DisconnectedFor: time.Minute}

// Checker evaluates readiness from observations, logs each change, and
// remembers the disconnection it needs. Its methods are safe for
// concurrent use.
type Checker struct {
	Rules Rules
	log   *slog.Logger

	mu           sync.Mutex
	cur          observe.Health
	disconnected time.Time // since when ingest has had no connection (zero: connected)
}

// New starts not ready ("not evaluated yet").
func New(rules Rules, log *slog.Logger) *Checker {
	return &Checker{Rules: rules, log: log, cur: observe.Health{Reasons: []string{"starting: not evaluated yet"}}}
}

// State is readiness as last evaluated.
func (h *Checker) State() observe.Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.cur
	s.Reasons = slices.Clone(s.Reasons)
	s.Warnings = slices.Clone(s.Warnings)
	return s
}

// Evaluate turns an observation into readiness and stores it; it logs the
// reasons that appeared (warning) and the return to ready (info). totals
// gives a query's running totals, whose newest batches the trend rules
// read (telemetry.query).
func (h *Checker) Evaluate(o observe.Observation, totals func(query string) (telemetry.Totals, bool)) observe.Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	var reasons []string
	stalled := false
	now := o.At
	if len(o.Topics) == 0 {
		reasons = append(reasons, "broker: its topics cannot be read")
		stalled = true
	}
	for _, t := range o.Tables {
		if t.Name == table.Bronze && t.Error != "" {
			reasons = append(reasons, "catalog: "+t.Error)
			stalled = true
		}
	}
	if o.OddErr != "" {
		reasons = append(reasons, "catalog: its entries could not be checked: "+o.OddErr)
	}
	for _, q := range o.Queries {
		tot, _ := totals(q.Name)
		r, st := h.queryReasons(q, &tot, o, now)
		reasons = append(reasons, r...)
		stalled = stalled || st
	}
	if o.Refresh != nil {
		if o.Refresh.Err != "" {
			reasons = append(reasons, fmt.Sprintf("marts refresh %s failed: %s", o.Refresh.RunID, o.Refresh.Err))
		}
		for _, c := range o.Refresh.Checks {
			if !c.Passed {
				reasons = append(reasons, fmt.Sprintf("asset check %s failed: %s", c.Name, c.Message))
			}
		}
	}
	ingestDown := ""
	if o.Ingest != nil && o.Ingest.Paused != "" {
		reasons = append(reasons, "ingest paused: "+o.Ingest.Paused)
	}
	if o.Ingest != nil {
		switch {
		case o.Ingest.Connected:
			h.disconnected = time.Time{}
		case h.disconnected.IsZero():
			h.disconnected = now
		case now.Sub(h.disconnected) >= h.Rules.DisconnectedFor:
			why := ""
			if e := o.Ingest.LastError; e != "" {
				why = "; last error: " + e
			}
			ingestDown = fmt.Sprintf("ingest: not connected to the source for %s (%d reconnects so far%s)",
				now.Sub(h.disconnected).Round(time.Second), o.Ingest.Reconnects, why)
			reasons = append(reasons, ingestDown)
		}
	}
	var warnings []string
	if o.Disk != nil && o.Disk.Warning != "" {
		warnings = append(warnings, o.Disk.Warning)
	}
	// A client's odd table is the client's to fix: the appliance's own
	// tables are served and committed regardless, so it warns, and stays
	// ready (a red /readyz would have monitors restart an appliance that
	// works).
	for _, t := range o.OddTables {
		warnings = append(warnings, fmt.Sprintf("catalog: client table %s not served for changes: %s (drop it through REST, or with the appliance stopped: lakehouse catalog --drop %s)", t.Name, t.Reason, t.Name))
	}
	next := observe.Health{Ready: len(reasons) == 0, Reasons: reasons, Warnings: warnings, Progressing: !stalled, IngestDown: ingestDown, CheckedAt: now}
	h.logChanges(h.cur, next)
	h.cur = next
	return next
}

// queryReasons are what is wrong with one query; stalled reports a query
// that is not moving at all.
func (h *Checker) queryReasons(q observe.Query, tot *telemetry.Totals, o observe.Observation, now time.Time) (reasons []string, stalled bool) {
	name := "query " + q.Name
	if q.Error != "" {
		return []string{name + ": " + q.Error}, true
	}
	if p := q.Paused; p != nil {
		// Waiting on purpose, so not stalled: the watchdog stays fed.
		return []string{fmt.Sprintf("%s paused for %s: storage full or unreachable (%d attempts; last error: %s)",
			name, now.Sub(p.Since).Round(time.Second), p.Attempts, p.Err)}, false
	}
	last := q.Totals.LastAt
	if last.IsZero() {
		last = o.Started
	}
	if q.Lag > 0 && now.Sub(last) >= h.Rules.StallAfter {
		reasons = append(reasons, fmt.Sprintf("%s stalled: %d waiting, no batch for %s", name, q.Lag, now.Sub(last).Round(time.Second)))
		stalled = true
	}
	if first, last, ok := tot.LagTrend(now, h.Rules.GrowingFor); ok && last.Lag > first.Lag {
		reasons = append(reasons, fmt.Sprintf("%s falling behind: the lag left after its batches grew from %d to %d over %s",
			name, first.Lag, last.Lag, last.At.Sub(first.At).Round(time.Second)))
	}
	if _, cand, late := tot.Window(now, h.Rules.LateWindow); cand >= h.Rules.LateMinRows && float64(late) >= h.Rules.LateFraction*float64(cand) {
		reasons = append(reasons, fmt.Sprintf("%s drops %d of %d rows as late (below its watermark) in the last %s", name, late, cand, h.Rules.LateWindow))
	}
	if q.IDChanges > 0 && now.Sub(o.Started) < h.Rules.IDChangeHold {
		reasons = append(reasons, fmt.Sprintf("%s: its checkpoint was lost or replaced at start (query id was %s, now %s)", name, q.PreviousQueryID, q.QueryID))
	}
	return reasons, stalled
}

func (h *Checker) logChanges(prev, next observe.Health) {
	for _, r := range next.Reasons {
		if !slices.Contains(prev.Reasons, r) && !sameReason(prev.Reasons, r) {
			h.log.Warn("not ready: "+r, "component", "health")
		}
	}
	if next.Ready && !prev.Ready {
		h.log.Info("ready", "component", "health")
	}
}

// sameReason reports whether a reason of the same kind (its text up to the
// first digit) was already present, so a counter in it does not log again.
func sameReason(prev []string, r string) bool {
	key := func(s string) string {
		for i, c := range s {
			if c >= '0' && c <= '9' {
				return s[:i]
			}
		}
		return s
	}
	for _, p := range prev {
		if key(p) == key(r) {
			return true
		}
	}
	return false
}
