package stream

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestNextWatermark(t *testing.T) {
	min10 := 10 * time.Minute
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixMicro()
	for _, tc := range []struct {
		name           string
		prev, maxEvent int64
		want           int64
	}{
		{"no events yet", NoTime, NoTime, NoTime},
		{"first events", NoTime, t0, t0 - min10.Microseconds()},
		{"advances", t0 - min10.Microseconds(), t0 + 60e6, t0 + 60e6 - min10.Microseconds()},
		{"never goes back", t0, t0 - 60e6, t0},
		{"no wrap-around below the first time", NoTime, math.MinInt64 + 1, NoTime},
	} {
		if got := NextWatermark(tc.prev, tc.maxEvent, min10); got != tc.want {
			t.Errorf("%s: NextWatermark = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestEventTimeMetaRoundTrip(t *testing.T) {
	wm := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if _, err := ParseEventTimeMeta(nil); !errors.Is(err, ErrBadMeta) {
		t.Fatalf("empty meta: got %v, want ErrBadMeta", err)
	}
	m, err := ParseEventTimeMeta([]byte(`{"watermark":"2026-11-29T12:00:00Z","planned":"2026-11-29T12:00:01Z"}`))
	if err != nil || !m.Watermark.Equal(wm) || m.WatermarkMicros() != wm.UnixMicro() {
		t.Fatalf("parse: got %+v, %v", m, err)
	}
	if (EventTimeMeta{}).WatermarkMicros() != NoTime || !MicrosTime(NoTime).IsZero() {
		t.Fatal("zero watermark must map to NoTime and back")
	}
}
