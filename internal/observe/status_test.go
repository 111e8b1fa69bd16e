package observe

import (
	"encoding/json"
	"math"
	"testing"

	"lakehouse/broker"
)

func TestStatusDrained(t *testing.T) {
	st := Status{Topics: map[string]int64{"recentchange": 10}, Queries: map[string]QueryStatus{
		"bronze": {Batch: 3, Lag: 0}, "silver": {Batch: 2, Lag: 0},
	}}
	if !st.Drained("recentchange", 10) {
		t.Fatal("all queries at lag 0 with every message: want drained")
	}
	if st.Drained("recentchange", 11) {
		t.Fatal("topic short of want: want not drained")
	}
	st.Queries["silver"] = QueryStatus{Batch: 2, Lag: 5}
	if st.Drained("recentchange", 10) {
		t.Fatal("silver lagging: want not drained")
	}
	st.Queries["silver"] = QueryStatus{Error: "boom"}
	if st.Drained("recentchange", 10) {
		t.Fatal("a query in error: want not drained")
	}
	if (Status{Topics: map[string]int64{"recentchange": 10}}).Drained("recentchange", 10) {
		t.Fatal("no queries: want not drained")
	}
	// Retention trimmed 6 of 10: the broker holds 4 but stored all 10.
	trimmed := Status{Topics: map[string]int64{"recentchange": 4}, Appended: map[string]int64{"recentchange": 10},
		Queries: map[string]QueryStatus{"bronze": {Batch: 3}}}
	if !trimmed.Drained("recentchange", 10) || trimmed.Drained("recentchange", 11) {
		t.Fatal("with Appended: want drained at 10 stored messages, not at 11, whatever retention trimmed")
	}
	if got := (Status{Queries: map[string]QueryStatus{"b": {Batch: 1, Lag: 2}, "a": {Batch: 0}}}).Lags(); got != "a batch 0 lag 0, b batch 1 lag 2" {
		t.Fatalf("Lags: got %q", got)
	}
}

// TestStatusProjectsTheObservation: /status is the brief Observation's
// projection: every counted topic with what it holds and ever stored, every
// query with its batch, lag, error and batch sums, and nothing for a topic
// whose count failed (a poller must not take an upper bound for a count).
func TestStatusProjectsTheObservation(t *testing.T) {
	o := Observation{Brief: true,
		Topics: []Topic{{Name: "recentchange", Records: 4, Appended: 10, Partitions: []broker.PartitionOffsets{{Partition: 0, End: 10}}},
			{Name: "recentchange.dlq", Records: 99, Error: "count: boom"}},
		Queries: []Query{{Name: "bronze", QueryID: "q1", Batch: 7, Lag: 3, Totals: Totals{Batches: 8, BatchSeconds: 1.5, CommitSeconds: 0.5}},
			{Name: "silver", Batch: -1, Error: "read: boom"}},
		Runtime: &Runtime{Goroutines: 12}}
	st := o.Status()
	if len(st.Topics) != 1 || st.Topics["recentchange"] != 4 || st.Appended["recentchange"] != 10 {
		t.Fatalf("topics: got %v appended %v, want recentchange 4 of 10 stored and no dlq", st.Topics, st.Appended)
	}
	if _, ok := st.Appended["recentchange.dlq"]; ok {
		t.Fatal("a topic whose count failed is in Appended")
	}
	want := QueryStatus{Batch: 7, Lag: 3, QueryID: "q1", Batches: 8, BatchSeconds: 1.5, CommitSeconds: 0.5}
	if st.Queries["bronze"] != want {
		t.Fatalf("bronze: got %+v, want %+v", st.Queries["bronze"], want)
	}
	if q := st.Queries["silver"]; q.Error != "read: boom" || q.Batch != -1 {
		t.Fatalf("silver: got %+v", q)
	}
	if st.Runtime == nil || st.Runtime.Goroutines != 12 {
		t.Fatalf("runtime: got %+v", st.Runtime)
	}
	if st.Drained("recentchange", 10) {
		t.Fatal("a query with a lag and one in error: want not drained")
	}
}

// TestFloatJSON: NaN and infinities travel as null and come back as NaN.
func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal([]Float{1.5, Float(math.NaN()), Float(math.Inf(1))})
	if err != nil || string(b) != "[1.5,null,null]" {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var back []Float
	if err := json.Unmarshal(b, &back); err != nil || back[0] != 1.5 || !math.IsNaN(float64(back[1])) {
		t.Fatalf("unmarshal: %v, %v", back, err)
	}
}

// TestDrainNote: the lags come first (a terminal's width cuts the note from
// the end), in name order, then the broker's count and the batches.
func TestDrainNote(t *testing.T) {
	st := Status{Topics: map[string]int64{"recentchange": 20_400},
		Queries: map[string]QueryStatus{"silver": {Batch: 39, Lag: 1500}, "bronze": {Batch: 41, Lag: 0}}}
	want := "bronze lag 0, silver lag 1,500; broker 20,400 of 20,500; batches bronze 41, silver 39"
	if got := st.DrainNote("recentchange", 20_500); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
