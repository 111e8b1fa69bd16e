package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/recentchange"
)

// The contract's rules that JSON Schema cannot state. Each closes a way in
// which a schema-valid event would be read differently downstream, so that
// "valid" means "silver stores it as the contract saw it" (the rules
// themselves are defined in internal/recentchange, which silver uses too):
//
//   - Text: no object has a key twice (encoding/json keeps the last, DuckDB
//     the first); strings are UTF-8 without lone surrogate escapes
//     (encoding/json, so silver, stores U+FFFD; bronze keeps the raw bytes,
//     and DuckDB refuses to read them as a string).
//   - Keys: no key matches a member silver reads only ignoring case
//     ("TIMESTAMP", "Revision", "Type"): silver's decoder, encoding/json,
//     matches keys case-insensitively, the schema does not.
//   - Integers silver stores are literals that fit its column (1.0 and 1e3
//     are integers to JSON Schema, not to encoding/json; namespace is int32).
//   - Times: meta.dt is a time silver parses, and the event's times are
//     bounded by its intake time (recentchange.CheckTimes).
//
// Reasons read like the schema's ("at '/pointer': what"), so a DLQ record
// says exactly which member broke which rule.

// textRules returns the reasons for the flaws of the text and for keys
// silver would read ignoring case. They hold whatever the document's shape.
func textRules(doc any, fl *flaw) []string {
	var out []string
	switch fl.kind {
	case flawDuplicate:
		out = append(out, fmt.Sprintf("at '%s': key given twice (again at byte %d)", fl.pointer(), fl.offset))
	case flawBadUTF8, flawSurrogate:
		what := "invalid UTF-8"
		if fl.kind == flawSurrogate {
			what = "a \\u escape of a lone UTF-16 surrogate"
		}
		where := "a string"
		if fl.inKey {
			where = "a key"
		}
		out = append(out, fmt.Sprintf("at '%s': %s in %s (byte %d)", fl.pointer(), what, where, fl.offset))
	case flawUnchecked:
		out = append(out, "the text could not be checked for duplicate keys and invalid UTF-8")
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return out
	}
	out = foldedKeys(out, "", obj, recentchange.EventFields)
	if m, ok := obj["meta"].(map[string]any); ok {
		out = foldedKeys(out, "/meta", m, recentchange.MetaFields)
	}
	for _, k := range []string{"length", "revision"} {
		if m, ok := obj[k].(map[string]any); ok {
			out = foldedKeys(out, "/"+k, m, recentchange.OldNewFields)
		}
	}
	return out
}

// foldedKeys appends a reason for each key of obj that matches one of names
// only ignoring case, in key order.
func foldedKeys(out []string, at string, obj map[string]any, names []string) []string {
	var found []string
	for k := range obj {
		if name, folded := recentchange.FoldsTo(k, names); folded {
			found = append(found, fmt.Sprintf("at '%s/%s': key differs from %q only in case (silver's decoder matches keys ignoring case)",
				at, pointerToken(k), name))
		}
	}
	slices.Sort(found)
	return append(out, found...)
}

// pointerToken escapes a key for a JSON pointer.
func pointerToken(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// valueRules returns the event's timestamp and the reasons for integers
// silver cannot store and for times out of bounds. obj has passed the
// schema.
func (c *Contract) valueRules(obj map[string]any, received time.Time) (int64, []string) {
	var out []string
	var ts int64
	tsOK := false
	for _, in := range recentchange.Ints {
		var v any = obj
		for _, k := range in.Path {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[k]
		}
		n, ok := v.(json.Number)
		if !ok {
			continue // absent or null: the schema decides
		}
		i, err := strconv.ParseInt(string(n), 10, in.Bits)
		if err != nil {
			out = append(out, intReason(in, string(n), err))
			continue
		}
		if in.Path[0] == "timestamp" {
			ts, tsOK = i, true
		}
	}
	meta := obj["meta"].(map[string]any)
	dtText, _ := meta["dt"].(string)
	dt, err := recentchange.ParseDT(dtText)
	if err != nil {
		return ts, append(out, fmt.Sprintf("at '/meta/dt': not an RFC 3339 time silver reads: %v", err))
	}
	if !tsOK {
		return ts, out
	}
	if err := recentchange.CheckTimes(ts, dt, received, c.maxAhead); err != nil {
		var te *recentchange.TimeError
		if errors.As(err, &te) {
			out = append(out, fmt.Sprintf("at '/%s': %s", strings.ReplaceAll(te.Field, ".", "/"), te.Msg))
		} else {
			out = append(out, err.Error())
		}
	}
	return ts, out
}

// intReason says why lit is not an integer silver can store in in's column.
func intReason(in recentchange.Int, lit string, err error) string {
	at := "/" + strings.Join(in.Path, "/")
	if errors.Is(err, strconv.ErrRange) {
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if in.Bits == 32 {
			lo, hi = math.MinInt32, math.MaxInt32
		}
		return fmt.Sprintf("at '%s': got %s, want an integer from %d to %d (silver stores int%d)", at, lit, lo, hi, in.Bits)
	}
	return fmt.Sprintf("at '%s': got %s, want an integer written without fraction or exponent", at, lit)
}
