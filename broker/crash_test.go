package broker_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/internal/fault"
)

// The child side of TestCrashAppend: append numbered batches forever and
// print "ACK <batch>" after each Append returns.
func TestMain(m *testing.M) {
	if dir := os.Getenv("BROKER_CRASH_CHILD"); dir != "" {
		if hook := os.Getenv("BROKER_CRASH_HOOK"); hook != "" {
			skip, _ := strconv.Atoi(os.Getenv("BROKER_CRASH_SKIP"))
			fault.Arm(hook, skip)
		}
		crashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const crashTopic = "t"

func crashChild(dir string) {
	ctx := context.Background()
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{Compress: os.Getenv("BROKER_CRASH_COMPRESS") != "", CompressBatchBytes: 8 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	if err := db.CreateTopic(ctx, crashTopic, 3); err != nil {
		fmt.Fprintln(os.Stderr, "child topic:", err)
		os.Exit(2)
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
			fmt.Fprintln(os.Stderr, "child append:", err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stdout, "ACK %d\n", b)
	}
}

type crashRun struct {
	acked  []int
	stderr string
}

// runChild starts the child, kills it (after killAfter ACKs plus a random
// delay) unless an armed hook kills it first, and returns what it acked.
func runChild(t *testing.T, dir string, env []string, killAfter int, rng *rand.Rand) crashRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "BROKER_CRASH_CHILD="+dir), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var run crashRun
	sc := bufio.NewScanner(out)
	killed := false
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		var b int
		if _, err := fmt.Sscanf(sc.Text(), "ACK %d", &b); err == nil {
			run.acked = append(run.acked, b)
		}
		if killAfter > 0 && len(run.acked) == killAfter && !killed {
			killed = true
			d := time.Duration(rng.Intn(20)) * time.Millisecond
			time.AfterFunc(d, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		}
	}
	err = cmd.Wait()
	run.stderr = stderr.String()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\nstderr: %s", err, run.stderr)
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
		run := runChild(t, dir, []string{"BROKER_CRASH_HOOK=" + tc.hook, "BROKER_CRASH_SKIP=5"}, 0, rng)
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
