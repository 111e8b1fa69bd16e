package broker_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/internal/crashtest"
	"lakehouse/internal/fault"
)

// TestMain runs crashChild instead of the tests in TestCrashAppend's child
// process (crashtest role "append").
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{"append": crashChild}))
}

const crashTopic = "t"

// crashChild is the child's body (settings dir, compress, hook, skip):
// append numbered batches forever and print "ACK <batch>" after each
// Append returns.
func crashChild(s crashtest.Spec) error {
	s.Arm()
	ctx := context.Background()
	db, err := broker.Open(filepath.Join(s.Get("dir"), "broker.db"), broker.Options{Compress: s.Get("compress") != "", CompressBatchBytes: 8 << 10})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if err := db.CreateTopic(ctx, crashTopic, 3); err != nil {
		return fmt.Errorf("topic: %w", err)
	}
	next := 0
	if v, _ := db.Meta(ctx, "last-batch"); v != nil {
		n, _ := strconv.Atoi(string(v))
		next = n + 1
	}
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	pad := strings.Repeat("x", 200)
	for b := next; ; b++ {
		n := 1 + rng.Intn(50)
		recs := make([]broker.Record, n)
		for i := range recs {
			recs[i] = broker.Record{Topic: crashTopic, Partition: (b + i) % 3,
				Value: []byte(fmt.Sprintf("b=%d i=%d n=%d %s", b, i, n, pad))}
		}
		if _, err := db.Append(ctx, broker.Batch{Records: recs, Meta: []broker.Meta{{Key: "last-batch", Value: []byte(strconv.Itoa(b))}}}); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		fmt.Fprintf(os.Stdout, "ACK %d\n", b)
	}
}

type crashRun struct {
	acked  []int
	stderr string // the child's output
}

// runChild starts the child with settings, kills it (after killAfter ACKs
// plus a random delay) unless an armed hook kills it first, and returns
// what it acked.
func runChild(t *testing.T, dir string, settings []string, killAfter int, rng *rand.Rand) crashRun {
	t.Helper()
	c := crashtest.Start(t, "append", append([]string{"dir", dir}, settings...)...)
	if killAfter > 0 {
		if !c.WaitFor("ACK ", killAfter, time.Minute) {
			t.Fatalf("the child acked %d batches, want %d before the kill (exited: %v)\n%s", c.Count("ACK "), killAfter, c.Exited(), crashtest.Tail(c.Output(), 20))
		}
		c.KillAfter(time.Duration(rng.Intn(20)) * time.Millisecond)
	}
	err := c.Wait(t, time.Minute)
	run := crashRun{stderr: c.Output()}
	if !crashtest.WasKilled(err) {
		t.Fatalf("child did not die by SIGKILL: %v\noutput: %s", err, crashtest.Tail(run.stderr, 20))
	}
	for _, l := range c.Lines("ACK ") {
		b, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("child printed %q", "ACK "+l)
		}
		run.acked = append(run.acked, b)
	}
	return run
}

// checkLog verifies the invariants after a crash and returns the set of
// complete batches found.
func checkLog(t *testing.T, dir string) (batches map[int]bool, lastMeta int) {
	t.Helper()
	ctx := context.Background()
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer db.Close()
	offs, err := db.Offsets(ctx, crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	sizes := map[int]int{}
	for _, o := range offs {
		// Read validates that offsets are dense from start to end.
		msgs, err := db.Read(ctx, crashTopic, o.Partition, o.Start, 0)
		if err != nil {
			t.Fatalf("read partition %d: %v", o.Partition, err)
		}
		if int64(len(msgs)) != o.End-o.Start {
			t.Fatalf("partition %d: read %d records, offsets say %d", o.Partition, len(msgs), o.End-o.Start)
		}
		for _, m := range msgs {
			var b, i, n int
			if _, err := fmt.Sscanf(string(m.Value), "b=%d i=%d n=%d", &b, &i, &n); err != nil {
				t.Fatalf("record %d/%d: %v", o.Partition, m.Offset, err)
			}
			counts[b]++
			sizes[b] = n
		}
	}
	batches = map[int]bool{}
	lastMeta = -1
	for b, c := range counts {
		if c != sizes[b] {
			t.Fatalf("batch %d: %d of %d records visible: a partial batch", b, c, sizes[b])
		}
		batches[b] = true
	}
	for b := 0; b < len(batches); b++ {
		if !batches[b] {
			t.Fatalf("batch %d missing while %d batches are stored: a hole", b, len(batches))
		}
	}
	if v, _ := db.Meta(ctx, "last-batch"); v != nil {
		lastMeta, _ = strconv.Atoi(string(v))
	}
	if lastMeta != len(batches)-1 {
		t.Fatalf("producer metadata says last batch %d, stored batches 0..%d: metadata and records disagree", lastMeta, len(batches)-1)
	}
	return batches, lastMeta
}

// TestCrashAppend kills a continuously appending child at random moments
// and at the group commit's fault hooks; after each restart every Append
// that returned is readable, offsets are dense, no partial batch is visible
// and the producer metadata matches the records.
func TestCrashAppend(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	kills := 4
	if testing.Short() {
		kills = 2
	}
	for k := 0; k < kills; k++ {
		run := runChild(t, dir, nil, 20+rng.Intn(200), rng)
		if len(run.acked) == 0 {
			t.Fatalf("kill %d: inconclusive: the child was killed before any Append returned", k)
		}
		stored, _ := checkLog(t, dir)
		for _, b := range run.acked {
			if !stored[b] {
				t.Fatalf("kill %d: batch %d was acknowledged but is not stored", k, b)
			}
		}
		t.Logf("kill %d: %d batches acked in this run, %d stored in all", k, len(run.acked), len(stored))
	}
	// At the hooks: in-commit must lose the batch, after-commit must keep it.
	for _, tc := range []struct {
		hook string
		kept bool
	}{{"broker.in-commit", false}, {"broker.after-commit", true}} {
		before, _ := checkLog(t, dir)
		run := runChild(t, dir, []string{"hook", tc.hook, "skip", "5"}, 0, rng)
		if !strings.Contains(run.stderr, fault.Marker(tc.hook)) {
			t.Fatalf("%s: inconclusive: the hook did not fire (stderr %q)", tc.hook, run.stderr)
		}
		if len(run.acked) != 5 {
			t.Fatalf("%s: child acked %d batches before the hook, want 5", tc.hook, len(run.acked))
		}
		after, _ := checkLog(t, dir)
		gotExtra := len(after) - len(before) - len(run.acked)
		want := 0
		if tc.kept {
			want = 1
		}
		if gotExtra != want {
			t.Fatalf("%s: %d unacknowledged batches stored, want %d", tc.hook, gotExtra, want)
		}
	}
}
