// Package recentchange is the one definition of what the lakehouse requires
// of a recentchange event beyond the upstream JSON schema. Two places decide
// about an event: ingest's contract, which sends an event that breaks a rule
// to the dead-letter topic with the rule's reason, and silver's parser,
// which stores what the contract let through. Both take their rules from
// here, so "valid for the contract" and "silver can store it" are the same
// set of events (stream/silver FuzzContractAgreesWithSilver checks it).
// Silver's parser itself (ParseEdit, with its one-pass scan) lives here too,
// so the verifier can parse bronze exactly as silver does.
//
// The rules:
//   - The members silver reads (EventFields, MetaFields, OldNewFields) are
//     read under their exact names. encoding/json, silver's decoder, matches
//     keys case-insensitively; the contract refuses a key that matches one of
//     these names only that way (FoldsTo), so every reader sees one value.
//   - The integers silver stores (Ints) are integer literals (no fraction,
//     no exponent) within their column's range.
//   - Event time is bounded by intake time (CheckTimes): an event time
//     (timestamp) is whole seconds, not before MinTime, and not more than a
//     margin ahead of meta.dt, the time Wikimedia took the event in; meta.dt
//     is not before MinTime and not more than the margin ahead of the
//     broker's clock when the event arrived. A time in the past is allowed
//     (a backfill with --since, a replay of a recording): it never moves a
//     watermark, it is at worst dropped as late.
package recentchange

import (
	"fmt"
	"time"
)

// DefaultMaxAhead is the default margin of CheckTimes: how far an event's
// timestamp may be ahead of its meta.dt, and meta.dt ahead of the broker's
// clock.
const DefaultMaxAhead = 10 * time.Minute

// MinTimestamp is MinTime in Unix seconds.
const MinTimestamp int64 = 978307200

// MinTime is the earliest event time and intake time accepted:
// 2001-01-01T00:00:00Z, before the first wiki edit.
var MinTime = time.Unix(MinTimestamp, 0).UTC()

// maxTimestamp is 9999-12-31T23:59:59Z in Unix seconds: the last time
// RFC 3339 (and Time.MarshalJSON) can write.
const maxTimestamp int64 = 253402300799

// EventFields are the top-level members of an event that silver reads.
var EventFields = []string{"meta", "type", "namespace", "title", "comment", "timestamp", "user", "bot",
	"minor", "length", "revision", "server_name", "wiki"}

// MetaFields are the members of meta that silver reads.
var MetaFields = []string{"id", "dt"}

// OldNewFields are the members of length and revision that silver reads.
var OldNewFields = []string{"old", "new"}

// Int is an integer member silver stores, with the bit size of its column.
type Int struct {
	Path []string
	Bits int
}

// Ints are the integer members silver stores. encoding/json decodes each
// with strconv.ParseInt(literal, 10, Bits): anything else (1.0, 1e3, a
// value beyond the column) fails silver's decode.
var Ints = []Int{
	{[]string{"timestamp"}, 64},
	{[]string{"namespace"}, 32},
	{[]string{"length", "old"}, 64},
	{[]string{"length", "new"}, 64},
	{[]string{"revision", "old"}, 64},
	{[]string{"revision", "new"}, 64},
}

// FoldsTo returns the name of names that key matches as encoding/json
// matches an object key to a struct field (bytes.EqualFold: ASCII case, and
// the Kelvin sign and long s, which fold to k and s), when key is not
// exactly that name. names must be lower-case ASCII.
func FoldsTo(key string, names []string) (string, bool) {
	var buf [24]byte
	folded := buf[:0]
	for i := 0; i < len(key); {
		c := key[i]
		switch {
		case c < 0x80:
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			folded = append(folded, c)
			i++
		case len(key)-i >= 3 && key[i:i+3] == "\u212a": // KELVIN SIGN
			folded = append(folded, 'k')
			i += 3
		case len(key)-i >= 2 && key[i:i+2] == "\u017f": // LATIN SMALL LETTER LONG S
			folded = append(folded, 's')
			i += 2
		default:
			return "", false // no other rune folds onto an ASCII letter
		}
		if len(folded) == cap(buf) {
			return "", false // longer than every name
		}
	}
	for _, n := range names {
		if string(folded) == n {
			return n, key != n
		}
	}
	return "", false
}

// ParseDT parses meta.dt as silver reads it.
func ParseDT(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// TimeError is a broken time rule: the member (Field, "timestamp" or
// "meta.dt") and why.
type TimeError struct {
	Field string
	Msg   string
}

func (e *TimeError) Error() string { return e.Field + ": " + e.Msg }

// CheckTimes checks an event's times: timestamp ts (Unix seconds) not
// before MinTime and at most maxAhead after meta.dt dt; dt not before
// MinTime. When received (the broker's clock when the event arrived) is not
// zero, dt and ts must also be at most maxAhead after it. received counts at
// microsecond precision, as bronze's broker_ts holds it, so that silver,
// reading broker_ts, decides as the contract did. The error, a *TimeError,
// names the first rule broken.
func CheckTimes(ts int64, dt, received time.Time, maxAhead time.Duration) error {
	maxAhead = max(maxAhead, 0)
	if dt.Before(MinTime) {
		return &TimeError{"meta.dt", fmt.Sprintf("%s is before %s", dt.Format(time.RFC3339Nano), MinTime.Format(time.RFC3339))}
	}
	if !received.IsZero() {
		received = received.Truncate(time.Microsecond)
		if dt.After(received.Add(maxAhead)) {
			return &TimeError{"meta.dt", fmt.Sprintf("%s is %s ahead of the broker's clock (%s), more than the %s allowed",
				dt.Format(time.RFC3339Nano), span(dt, received), received.UTC().Format(time.RFC3339Nano), maxAhead)}
		}
	}
	switch {
	case ts < MinTimestamp:
		return &TimeError{"timestamp", fmt.Sprintf("%s is before %s", unixText(ts), MinTime.Format(time.RFC3339))}
	case ts > maxTimestamp:
		return &TimeError{"timestamp", fmt.Sprintf("%d is after 9999-12-31T23:59:59Z (not Unix seconds?)", ts)}
	}
	t := time.Unix(ts, 0)
	if limit := dt.Add(maxAhead); ts > limit.Unix() {
		return &TimeError{"timestamp", fmt.Sprintf("%s is %s ahead of meta.dt (%s), more than the %s allowed",
			unixText(ts), span(t, dt), dt.Format(time.RFC3339Nano), maxAhead)}
	}
	if !received.IsZero() {
		if limit := received.Add(maxAhead); ts > limit.Unix() {
			return &TimeError{"timestamp", fmt.Sprintf("%s is %s ahead of the broker's clock (%s), more than the %s allowed",
				unixText(ts), span(t, received), received.UTC().Format(time.RFC3339Nano), maxAhead)}
		}
	}
	return nil
}

// unixText writes Unix seconds with the time they stand for, when RFC 3339
// can write it: "4102444800 (2100-01-01T00:00:00Z)".
func unixText(ts int64) string {
	if ts < -62135596800 || ts > maxTimestamp {
		return fmt.Sprint(ts)
	}
	return fmt.Sprintf("%d (%s)", ts, time.Unix(ts, 0).UTC().Format(time.RFC3339))
}

// span writes later - earlier: a duration up to two days, whole days
// beyond (time.Duration ends at 292 years).
func span(later, earlier time.Time) string {
	if d := later.Sub(earlier); d < 48*time.Hour {
		return d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%d days", (later.Unix()-earlier.Unix())/86400)
}
