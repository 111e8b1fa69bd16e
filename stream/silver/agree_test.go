package silver

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/recentchange"
)

// One definition of valid: whatever the ingest contract lets into bronze,
// silver stores (or skips as a type it does not keep), reading what the
// contract read. The converse is not required: silver does not re-check
// what only the contract checks (a UUID meta.id, $schema, a non-empty
// wiki); but whatever silver does store has times within the rule
// (recentchange.CheckTimes), so no row can move the watermark.

// agreeIntake is the broker clock the checks use: a minute after the
// recorded events were taken in.
var agreeIntake = time.Date(2026, 2, 26, 15, 50, 40, 0, time.UTC)

func mustContract(t testing.TB) *ingest.Contract {
	t.Helper()
	c, err := ingest.NewContract()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkAgree fails t when the contract's verdict on raw (received at
// agreeIntake) and silver's parse disagree. It reports whether the
// contract accepted raw.
func checkAgree(t *testing.T, c *ingest.Contract, raw []byte) bool {
	t.Helper()
	ev, cerr := c.CheckAt(raw, agreeIntake)
	e, serr := parseEdit(raw, agreeIntake, recentchange.DefaultMaxAhead)
	if serr == nil {
		// Whatever silver stores is within the time rule and valid text.
		if e.EventTime%1_000_000 != 0 || recentchange.CheckTimes(e.EventTime/1_000_000, time.UnixMicro(e.IntakeTime), agreeIntake, recentchange.DefaultMaxAhead) != nil {
			t.Fatalf("silver parsed %q with event time %d, intake %d: outside the time rule", raw, e.EventTime, e.IntakeTime)
		}
		for _, s := range []string{e.ID, e.Wiki, e.Type, e.Title, e.User, e.ServerName} {
			if !utf8.ValidString(s) {
				t.Fatalf("silver parsed %q with invalid UTF-8 %q", raw, s)
			}
		}
	}
	if cerr != nil {
		if !errors.Is(cerr, ingest.ErrNotJSON) && !errors.Is(cerr, ingest.ErrContract) {
			t.Fatalf("contract error of unknown class for %q: %v", raw, cerr)
		}
		return false
	}
	// Bronze keeps raw as it is: it must be a UTF-8 string to every reader
	// (DuckDB refuses invalid UTF-8), and silver must store the text raw
	// holds, not U+FFFD in place of invalid bytes or lone surrogates.
	if !utf8.Valid(raw) {
		t.Fatalf("contract-valid event %q is not UTF-8", raw)
	}
	replaced := strings.Contains(e.Title+e.User+e.Wiki+e.ServerName+e.ID, "\uFFFD") ||
		e.Comment != nil && strings.Contains(*e.Comment, "\uFFFD")
	if replaced && !bytes.Contains(raw, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`)) {
		t.Fatalf("contract-valid event %q: silver stores U+FFFD where the event has other text", raw)
	}
	switch {
	case ev.Type != "edit" && ev.Type != "new":
		if !errors.Is(serr, errSkip) {
			t.Fatalf("contract-valid %s event %q: silver %v, want it skipped", ev.Type, raw, serr)
		}
	case serr != nil:
		t.Fatalf("contract-valid %s event %q: silver cannot store it: %v", ev.Type, raw, serr)
	case e.ID != ev.ID || e.Type != ev.Type || e.EventTime != ev.Timestamp*1_000_000:
		t.Fatalf("contract-valid event %q: contract read id %s, type %s, timestamp %d; silver %s, %s, %d µs",
			raw, ev.ID, ev.Type, ev.Timestamp, e.ID, e.Type, e.EventTime)
	}
	return true
}

// agreeSeeds are the inputs both tests start from: the recorded events,
// generated ones and each of Violate's breakages of them.
func agreeSeeds(t testing.TB) [][]byte {
	t.Helper()
	seeds := sampleEvents(t)
	gen := replay.Generate(14, 2*len(replay.ViolationKinds))
	for i, raw := range gen.Events {
		seeds = append(seeds, raw, replay.Violate(raw, i))
	}
	return seeds
}

// agreeEdits are JSON texts put in place of a member's value by the
// property test: the number, time, key and text cases where the contract
// and silver once disagreed, and their neighbours.
var agreeEdits = []string{
	`0`, `-0`, `1`, `-1`, `1.0`, `1e3`, `1E3`, `1.5`, `1e20`, `-1e20`, `2147483647`, `2147483648`, `-2147483648`, `-2147483649`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775809`, `123456789012345678901234567890`, `9007199254740991`,
	`978307199`, `978307200`, `1772120977`, `1772120977.0`, `1772121576`, `1772121577`, `1772121640`, `1772121641`, `1772121700`,
	`1772120977000`, `4102444800`, `null`, `true`, `false`, `""`, `"x"`, `"edit"`, `"new"`, `"log"`, `{}`, `[]`, `{"new":1}`, `{"old":1,"new":2}`,
	`"2026-02-26T15:49:36Z"`, `"2026-02-26T16:00:40Z"`, `"2026-02-26T16:00:41Z"`, `"2026-02-26t15:49:36z"`, `"2026-02-26T23:59:60Z"`,
	`"2000-12-31T23:59:59Z"`, `"2100-01-01T00:00:00Z"`, `"2026-02-26T15:49:36+24:00"`, `"2026-02-26T15:49:36-00:30"`,
	"\"\xff\"", `"\ud800"`, `"\ud83d\ude00"`, `"\u00e9"`,
}

// agreeKeys are keys the property test adds or renames members to.
var agreeKeys = func() []string {
	keys := []string{"TIMESTAMP", "Timestamp", "Type", "TYPE", "Revision", "Meta", "Bot", "Server_Name", "ſerver_name",
		"timeſtamp", "\u212aey", "Wiki", "NEW", "Old", "ID", "Dt", "x", "type", "timestamp", "bot", "server_name"}
	return append(keys, recentchange.EventFields...)
}()

// mutateEvent changes one thing of a valid event at random: a member's
// value (top level or in meta, length or revision) replaced by one of
// agreeEdits, a member removed, renamed or added with one of agreeKeys, or a
// byte of the text changed.
func mutateEvent(rng *rand.Rand, raw []byte) []byte {
	switch rng.IntN(6) {
	case 0: // a byte
		out := bytes.Clone(raw)
		if len(out) > 0 {
			const alphabet = "\"\\{}[],:0123456789.eE-+tfnul \xff\xc3"
			out[rng.IntN(len(out))] = alphabet[rng.IntN(len(alphabet))]
		}
		return out
	case 1: // an added member, after all others
		k := agreeKeys[rng.IntN(len(agreeKeys))]
		v := agreeEdits[rng.IntN(len(agreeEdits))]
		i := bytes.LastIndexByte(raw, '}')
		if i < 0 {
			return raw
		}
		return slices.Concat(raw[:i], []byte(fmt.Sprintf(`,%q:%s`, k, v)), raw[i:])
	}
	// A member of the event or of meta, length or revision: replaced,
	// removed or renamed, in the text (the order of keys kept).
	names := recentchange.EventFields
	if rng.IntN(3) == 0 {
		names = slices.Concat(recentchange.MetaFields, recentchange.OldNewFields)
	}
	name := names[rng.IntN(len(names))]
	key := []byte(`"` + name + `":`)
	i := bytes.Index(raw, key)
	if i < 0 {
		key = []byte(`"` + name + `": `)
		if i = bytes.Index(raw, key); i < 0 {
			return raw
		}
	}
	start := i + len(key)
	end := valueEnd(raw, start)
	switch rng.IntN(3) {
	case 0:
		return slices.Concat(raw[:start], []byte(agreeEdits[rng.IntN(len(agreeEdits))]), raw[end:])
	case 1:
		k := agreeKeys[rng.IntN(len(agreeKeys))]
		return slices.Concat(raw[:i], []byte(fmt.Sprintf(`%q:`, k)), raw[start:])
	}
	// removed, with the comma before or after it
	switch {
	case end < len(raw) && raw[end] == ',':
		end++
	case i > 0 && bytes.LastIndexByte(raw[:i], ',') >= 0:
		i = bytes.LastIndexByte(raw[:i], ',')
	}
	return slices.Concat(raw[:i], raw[end:])
}

// valueEnd returns the end of the JSON value starting at i (a rough scan
// that is exact for valid text: strings, nesting, scalars).
func valueEnd(b []byte, i int) int {
	for i < len(b) && b[i] == ' ' {
		i++
	}
	depth, in := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case in:
			if c == '\\' {
				j++
			} else if c == '"' {
				in = false
				if depth == 0 {
					return j + 1
				}
			}
		case c == '"':
			in = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case depth == 0 && (c == ',' || c == ' '):
			return j
		}
	}
	return len(b)
}

// TestContractAgreesWithSilver: on the recorded and generated events, each
// of Violate's breakages, and 30,000 random one-change mutations of them
// (numbers, times, case-folded and duplicate keys, removed members, bytes),
// the contract's verdict and silver's parse agree (checkAgree).
func TestContractAgreesWithSilver(t *testing.T) {
	c := mustContract(t)
	seeds := agreeSeeds(t)
	valid, n := 0, 0
	for _, raw := range seeds {
		if checkAgree(t, c, raw) {
			valid++
		}
		n++
	}
	rng := rand.New(rand.NewPCG(14, 2026))
	var ok [][]byte
	for _, raw := range seeds {
		if _, err := c.CheckAt(raw, agreeIntake); err == nil {
			ok = append(ok, raw)
		}
	}
	for range 30_000 {
		raw := mutateEvent(rng, ok[rng.IntN(len(ok))])
		if rng.IntN(4) == 0 {
			raw = mutateEvent(rng, raw) // two changes
		}
		if checkAgree(t, c, raw) {
			valid++
		}
		n++
	}
	t.Logf("%d inputs, %d valid for the contract", n, valid)
	if valid < n/10 || valid > n*9/10 {
		t.Fatalf("inconclusive: %d of %d inputs valid", valid, n)
	}
}

// FuzzContractAgreesWithSilver: arbitrary bytes, and mutations of the real
// events, get the same verdict from the contract and silver (checkAgree).
// The seed corpus is testdata/fuzz/FuzzContractAgreesWithSilver plus the
// seeds below.
func FuzzContractAgreesWithSilver(f *testing.F) {
	for _, raw := range agreeSeeds(f) {
		f.Add(raw)
	}
	c := mustContract(f)
	f.Fuzz(func(t *testing.T, raw []byte) { checkAgree(t, c, raw) })
}
