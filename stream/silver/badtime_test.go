package silver

import (
	"bytes"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/recentchange"
)

// withMember returns the event JSON raw with the value of member key (a
// top-level number or string, or meta's dt) replaced by the JSON text lit.
func withMember(t *testing.T, raw []byte, key, lit string) []byte {
	t.Helper()
	re := regexp.MustCompile(`"` + key + `":("[^"]*"|-?[0-9][0-9.eE+-]*)`)
	if !re.Match(raw) {
		t.Fatalf("no %s in %s", key, raw)
	}
	return re.ReplaceAll(raw, []byte(`"`+key+`":`+lit))
}

// TestBadTimesInBronzeNeverMoveTheWatermark: rows an earlier contract let
// into bronze with times silver must not use (issue 14: a timestamp in
// 2100, one in milliseconds, 2^53-1 that overflows microseconds; a meta.dt
// far ahead of the broker's clock; times before 2001) are counted
// unparseable with the rule they break, never moving the watermark: the
// next batch plans (no Time.MarshalJSON overflow), the on-time edits after
// them land, and so they do after a restart from the checkpoint.
func TestBadTimesInBronzeNeverMoveTheWatermark(t *testing.T) {
	h := newHarness(t, Config{})
	edit := func(n int, at time.Time) []byte { return eventJSON(ev{ID: uuidFor(n), At: at}) }
	ms := fmt.Sprint(base.Unix() * 1000)
	bad := []struct {
		raw  []byte
		rule string
	}{
		{withMember(t, edit(2, base), "timestamp", "4102444800"), "timestamp: 4102444800 (2100-01-01T00:00:00Z) is 26971 days ahead of meta.dt"},
		{withMember(t, edit(3, base), "timestamp", ms), "timestamp: " + ms + " is after 9999-12-31T23:59:59Z"},
		{withMember(t, edit(4, base), "timestamp", "9007199254740991"), "is after 9999-12-31T23:59:59Z"},
		{withMember(t, withMember(t, edit(5, base), "timestamp", "4102444800"), "dt", `"2100-01-01T00:00:01Z"`),
			"meta.dt: 2100-01-01T00:00:01Z is "},
		{withMember(t, edit(6, base), "timestamp", "946684799"), "timestamp: 946684799 (1999-12-31T23:59:59Z) is before 2001-01-01T00:00:00Z"},
		{withMember(t, edit(7, base), "timestamp", fmt.Sprint(base.Add(11*time.Minute).Unix())), "ahead of meta.dt"},
	}
	values := [][]byte{edit(1, base)}
	for _, b := range bad {
		values = append(values, b.raw)
		_, err := parseEdit(b.raw, time.Now(), recentchange.DefaultMaxAhead)
		if err == nil || !strings.Contains(err.Error(), b.rule) {
			t.Errorf("parse %s: got %v, want an error naming %q", b.raw, err, b.rule)
		}
	}
	r := h.batch(values...)
	if got, want := r.IDs, []string{uuidFor(1)}; !slices.Equal(got, want) {
		t.Errorf("batch 0 rows: got %v, want %v", got, want)
	}
	if got, want := r.Counts.Unparseable, int64(len(bad)); got != want {
		t.Errorf("batch 0 unparseable: got %d, want %d", got, want)
	}
	// The watermark follows the on-time edit only.
	r = h.batch(edit(10, base.Add(time.Minute)))
	if got, want := r.IDs, []string{uuidFor(10)}; !slices.Equal(got, want) || r.Counts.Late != 0 {
		t.Errorf("batch 1 rows: got %v (late %d), want %v", got, r.Counts.Late, want)
	}
	if got, want := r.Meta.Watermark, base.Add(-DefaultWatermarkDelay); !got.Equal(want) {
		t.Errorf("batch 1 watermark: got %v, want %v", got, want)
	}
	// A restart: a new processor on the same checkpoint.
	h.p = NewProcessor(Config{Logger: slog.New(slog.DiscardHandler)})
	r = h.batch(edit(11, base.Add(2*time.Minute)), bytes.Clone(bad[0].raw))
	if got, want := r.IDs, []string{uuidFor(11)}; !slices.Equal(got, want) || r.Counts.Late != 0 || r.Counts.Unparseable != 1 {
		t.Errorf("after the restart: rows %v, counts %+v; want %v, one unparseable", got, r.Counts, want)
	}
	if got, want := r.Meta.Watermark, base.Add(time.Minute-DefaultWatermarkDelay); !got.Equal(want) {
		t.Errorf("after the restart, watermark: got %v, want %v", got, want)
	}
}

// TestMaxEventAheadIsTheMargin: the margin is a setting, the same rule the
// contract applies: an edit 11 minutes ahead of meta.dt is refused with the
// default 10 minutes and stored with 15.
func TestMaxEventAheadIsTheMargin(t *testing.T) {
	raw := withMember(t, eventJSON(ev{ID: uuidFor(1), At: base}), "timestamp", fmt.Sprint(base.Add(11*time.Minute).Unix()))
	for _, tc := range []struct {
		margin time.Duration
		rows   int
	}{{0, 0}, {15 * time.Minute, 1}} {
		h := newHarness(t, Config{MaxEventAhead: tc.margin})
		if r := h.batch(raw); len(r.IDs) != tc.rows {
			t.Errorf("margin %v: got %d rows (counts %+v), want %d", tc.margin, len(r.IDs), r.Counts, tc.rows)
		}
	}
}
