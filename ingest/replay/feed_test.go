package replay

import (
	"lakehouse/ingest"
	"testing"
)

// TestFeedEndlessLoopCounts: a Feed enqueues a recording's passes in pieces,
// each pass with fresh ids, and the counts are exact after every call.
func TestFeedEndlessLoopCounts(t *testing.T) {
	rec := Generate(21, 40)
	var editNew [41]int64
	for i, raw := range rec.Events {
		editNew[i+1] = editNew[i]
		if typ := newTemplate(raw).typ; typ == "edit" || typ == "new" {
			editNew[i+1]++
		}
	}
	r, url := startReplay(t, Config{Seed: 5})
	r.Loops(rec, 1) // a pass enqueued the old way first: the Feed's passes follow it
	f := r.Feed(rec)
	steps := []struct {
		n             int
		loops         int
		onTime, editN int64
	}{
		{15, 2, 55, editNew[40] + editNew[15]},
		{50, 3, 105, 2*editNew[40] + editNew[25]},
		{0, 3, 105, 2*editNew[40] + editNew[25]},
		{20, 4, 125, 3*editNew[40] + editNew[5]},
	}
	for i, s := range steps {
		f.Next(s.n)
		c := r.Counts()
		if c.Loops != s.loops || c.OnTime != s.onTime || c.OnTimeEditNew != s.editN || c.Events != s.onTime {
			t.Fatalf("after step %d (Next(%d)): loops %d, on time %d, edit/new %d, events %d; want %d, %d, %d, %d",
				i, s.n, c.Loops, c.OnTime, c.OnTimeEditNew, c.Events, s.loops, s.onTime, s.editN, s.onTime)
		}
	}
	// Resend of the partial last pass repeats what it enqueued, no more.
	if err := r.Resend(3); err != nil {
		t.Fatal(err)
	}
	if got := r.Counts().Resent; got != 5 {
		t.Errorf("resend of the 5-event partial pass: got %d resent, want 5", got)
	}
	f.Violations(3)
	f.Violations(2)

	evs := readEvents(t, url, "", r.Len())
	held := r.Events(0)
	ids := map[string]bool{}
	for i := range 125 {
		want := LoopID(5, 1+(i-40)/40, newTemplate(rec.Events[i%40]).metaID)
		if i < 40 {
			want = newTemplate(rec.Events[i]).metaID
		}
		if got := metaIDOfData(t, evs[i].Data); got != want || held[i].MetaID != want {
			t.Fatalf("event %d: sent id %s, held id %s; want %s", i, got, held[i].MetaID, want)
		}
		if err := ingest.Validate([]byte(evs[i].Data)); err != nil {
			t.Errorf("event %d fails the contract: %v", i, err)
		}
		ids[want] = true
	}
	if len(ids) != 125 {
		t.Errorf("distinct ids of the on-time events: got %d, want 125", len(ids))
	}
	for i := 125; i < 130; i++ {
		if got, want := metaIDOfData(t, evs[i].Data), held[120+i-125].MetaID; got != want {
			t.Errorf("resent event %d: got id %s, want %s", i, got, want)
		}
	}
	// The five violations are the first five kinds, across both calls.
	for i := range 5 {
		e := evs[130+i]
		if held[130+i].Kind != KindViolation || ingest.Validate([]byte(e.Data)) == nil {
			t.Errorf("violation %d (%s) passes the contract or is not held as one", i, ViolationKinds[i])
		}
	}
	if got, want := held[133].MetaID, "not-a-uuid"; got != want {
		t.Errorf("fourth violation (the second call's first): meta.id %q, want %q (kind %s)", got, want, ViolationKinds[3])
	}
	if c := r.Counts(); c.Violations != 5 {
		t.Errorf("violations counted: got %d, want 5", c.Violations)
	}
}
