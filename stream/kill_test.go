package stream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/fault"
	"lakehouse/table"
)

// Environment of the kill test's child process (the appliance: broker +
// bronze in one process).
const (
	envChildDir   = "LAKEHOUSE_STREAM_KILL_DIR"   // data dir; set only in the child
	envChildHook  = "LAKEHOUSE_STREAM_KILL_HOOK"  // hook to arm, "" for none
	envChildSkip  = "LAKEHOUSE_STREAM_KILL_SKIP"  // hits to let pass
	envChildMode  = "LAKEHOUSE_STREAM_KILL_MODE"  // "run" (until killed) or "drain"
	envKillSoak   = "LAKEHOUSE_STREAM_SOAK"       // set: more random kills
	envChildKafka = "LAKEHOUSE_STREAM_KILL_KAFKA" // Kafka seed addresses, comma-separated; "": broker.db
	envChildS3    = "LAKEHOUSE_STREAM_KILL_S3"    // S3 endpoint of the warehouse; "": local
)

// killStores is where a kill test's broker and warehouse are: broker.db and
// a local warehouse in the data directory, or a Kafka cluster and an S3
// bucket the parent serves on loopback.
type killStores struct {
	kafka []string // seeds; nil: broker.db
	s3    string   // endpoint; "": local
}

func killStoresFromEnv() killStores {
	var k killStores
	if v := os.Getenv(envChildKafka); v != "" {
		k.kafka = strings.Split(v, ",")
	}
	k.s3 = os.Getenv(envChildS3)
	return k
}

func (k killStores) env() []string {
	return []string{envChildKafka + "=" + strings.Join(k.kafka, ","), envChildS3 + "=" + k.s3}
}

// openLog opens the broker; the bronze child never appends.
func (k killStores) openLog(ctx context.Context, dir string) (broker.Log, error) {
	if k.kafka == nil {
		return broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	}
	return kafka.Open(ctx, kafka.Config{Seeds: k.kafka, NoAppend: true})
}

func (k killStores) lakeConfig(dir string) table.Config {
	cfg := table.Config{Dir: dir}
	if k.s3 != "" {
		cfg.Warehouse = "s3://lake/warehouse"
		cfg.S3 = table.S3Config{Endpoint: k.s3, Region: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test"}
	}
	return cfg
}

const (
	killTotal      = 24_000
	killPartitions = 4
	killCap        = 300
	killTrigger    = 50 * time.Millisecond
)

// bronzeKillChild is the child's body (TestMain runs it instead of the
// tests when envChildDir is set): the broker and bronze in one process,
// running until killed or, in "drain" mode, until bronze holds the backlog.
func bronzeKillChild(dir string) error {
	ctx := context.Background()
	stores := killStoresFromEnv()
	db, err := stores.openLog(ctx, dir)
	if err != nil {
		return err
	}
	defer db.Close()
	lake, err := table.Open(ctx, stores.lakeConfig(dir))
	if err != nil {
		return err
	}
	defer lake.Close()
	if err := lake.EnsureTables(ctx); err != nil {
		return err
	}
	cfg := Config{DataDir: dir, MaxOffsetsPerTrigger: killCap, Trigger: killTrigger,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)), ProgressEvery: 5}
	if hook := os.Getenv(envChildHook); hook != "" {
		skip, _ := strconv.Atoi(os.Getenv(envChildSkip))
		// Progress flushes also commit through the table's hooks: keep them
		// out of the way so the armed hook fires in a bronze batch.
		cfg.ProgressEvery, cfg.ProgressInterval = 1<<30, time.Hour
		fault.Arm(hook, skip)
	}
	q, err := NewBronze(db, lake, cfg)
	if err != nil {
		return err
	}
	if os.Getenv(envChildMode) == "drain" {
		return q.Drain(ctx)
	}
	return q.Run(ctx)
}

// child is one run of the appliance as a child process.
type child struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	batch  chan struct{} // receives on every "stream batch" log line
	done   chan error
}

func startChild(t *testing.T, stores killStores, dir, mode, hook string, skip int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0]) // TestMain runs bronzeKillChild

	cmd.Env = append(append(os.Environ(), envChildDir+"="+dir, envChildMode+"="+mode,
		envChildHook+"="+hook, envChildSkip+"="+strconv.Itoa(skip)), stores.env()...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = pw
	c := &child{cmd: cmd, batch: make(chan struct{}, 1024), done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.stderr.WriteString(line + "\n")
			c.mu.Unlock()
			if strings.Contains(line, "msg=\"stream batch\"") {
				select {
				case c.batch <- struct{}{}:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr) // never block the child on a full pipe
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		<-scanned // every line, including a fault marker printed just before the kill, is in c.stderr
		c.done <- err
	}()
	return c
}

func (c *child) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// wait returns the child's exit error, or fails after d.
func (c *child) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(d):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("child did not exit within %s; output:\n%s", d, tail(c.output()))
		return nil
	}
}

func wasKilled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// killState is what the parent sees on disk after a kill.
type killState struct {
	rows       int   // committed bronze rows (fresh table scan)
	planned    int64 // latest offset entry (-1: none)
	committed  int64 // latest commit entry (-1: none)
	tableBatch int64 // bronze marker batch (-1: none)
}

func inspect(t *testing.T, stores killStores, dir string) killState {
	t.Helper()
	lake := openLakeWith(t, stores.lakeConfig(dir))
	defer lake.Close()
	s := killState{rows: len(bronzePairs(t, lake)), planned: -1, committed: -1, tableBatch: -1}
	if m, ok, err := lake.LastCommitted(context.Background(), table.Bronze, BronzeQuery); err != nil {
		t.Fatal(err)
	} else if ok {
		s.tableBatch = m.Batch
	}
	cp, err := OpenCheckpoint(CheckpointPath(dir, BronzeQuery))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok, err := cp.LatestOffsets(); err != nil {
		t.Fatal(err)
	} else if ok {
		s.planned = e.Batch
	}
	if e, ok, err := cp.LatestCommit(); err != nil {
		t.Fatal(err)
	} else if ok {
		s.committed = e.Batch
	}
	return s
}

// TestBronzeKill runs broker + bronze as a child process over a backlog,
// SIGKILLs it at random moments and at each fault hook of the batch
// protocol, then drains and checks that every record the broker holds is
// in bronze exactly once and every batch has exactly one progress row: on
// broker.db and a local warehouse, and on a Kafka cluster (kfake, with
// its transaction markers between the records) and an S3 warehouse
// (gofakes3), both served by the test process and outliving every kill.
func TestBronzeKill(t *testing.T) {
	t.Run("bbolt-local", func(t *testing.T) {
		dir := t.TempDir()
		db := openBroker(t, filepath.Join(dir, "broker.db"), killPartitions)
		fill(t, db, killTotal, 1000)
		held := heldPairs(t, db)
		if err := db.Close(); err != nil { // the child owns the broker file
			t.Fatal(err)
		}
		bronzeKill(t, killStores{}, dir, held)
	})
	t.Run("kafka-s3", func(t *testing.T) {
		kc, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		stores := killStores{kafka: kc.ListenAddrs(), s3: fakeS3(t, "lake")}
		log, err := kafka.Open(context.Background(), kafka.Config{Seeds: stores.kafka})
		if err != nil {
			t.Fatal(err)
		}
		if err := log.CreateTopic(context.Background(), testTopic, killPartitions); err != nil {
			t.Fatal(err)
		}
		fill(t, log, killTotal, 1000)
		held := heldPairs(t, log)
		log.Close()
		var span int64
		for _, o := range testPartitions(t, openKafkaReader(t, stores)) {
			span += o.End - o.Start
		}
		if span <= killTotal {
			t.Fatalf("inconclusive: Kafka's offsets span %d for %d records: none skipped", span, killTotal)
		}
		bronzeKill(t, stores, t.TempDir(), held)
	})
}

// heldPairs is every (partition, offset) of the test topic that holds a
// record, read from the log.
func heldPairs(t *testing.T, log broker.Log) map[pair]bool {
	t.Helper()
	out := map[pair]bool{}
	for _, o := range testPartitions(t, log) {
		if err := broker.EachHeld(context.Background(), log, testTopic, o, o.Start, o.End,
			func(off int64) { out[pair{o.Partition, off}] = true }); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != killTotal {
		t.Fatalf("the broker holds %d records, want %d", len(out), killTotal)
	}
	return out
}

func openKafkaReader(t *testing.T, stores killStores) broker.Log {
	t.Helper()
	l, err := kafka.Open(context.Background(), kafka.Config{Seeds: stores.kafka, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// bronzeKill is TestBronzeKill on one pair of stores; held is every record
// the broker holds.
func bronzeKill(t *testing.T, stores killStores, dir string, held map[pair]bool) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))

	type round struct {
		hook string // "" = random SIGKILL
		// check proves the kill landed where the hook says, from disk.
		check func(s killState) error
	}
	notCommitted := func(s killState) error {
		if s.planned < 0 || s.committed >= s.planned || s.tableBatch >= s.planned {
			return fmt.Errorf("want batch %d planned, not in the table, no commit entry; table %d, commit %d", s.planned, s.tableBatch, s.committed)
		}
		return nil
	}
	rounds := []round{
		{hook: ""}, {hook: ""},
		{hook: hookAfterOffsetEntry, check: notCommitted},
		{hook: "table.after-data-files", check: notCommitted},
		{hook: "table.after-commit", check: func(s killState) error {
			if s.tableBatch != s.planned || s.committed != s.planned-1 {
				return fmt.Errorf("want batch %d in the table without a commit entry; table %d, commit %d", s.planned, s.tableBatch, s.committed)
			}
			return nil
		}},
		{hook: hookAfterCommitEntry, check: func(s killState) error {
			if s.tableBatch != s.planned || s.committed != s.planned {
				return fmt.Errorf("want batch %d committed everywhere; table %d, commit %d", s.planned, s.tableBatch, s.committed)
			}
			return nil
		}},
		{hook: ""},
	}
	if os.Getenv(envKillSoak) != "" {
		for i := 0; i < 6; i++ {
			rounds = append(rounds, round{hook: ""})
		}
	}
	prev := 0
	for i, r := range rounds {
		name := r.hook
		if name == "" {
			name = "random SIGKILL"
		}
		skip := 0
		if r.hook != "" {
			skip = 1 + rng.IntN(2)
		}
		c := startChild(t, stores, dir, "run", r.hook, skip)
		if r.hook == "" {
			// A random moment while batches are running.
			select {
			case <-c.batch:
			case err := <-c.done:
				t.Fatalf("round %d: child exited before its first batch: %v\n%s", i, err, tail(c.output()))
			case <-time.After(60 * time.Second):
				t.Fatalf("round %d: no batch within 60s\n%s", i, tail(c.output()))
			}
			time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
			if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		err := c.wait(t, 90*time.Second)
		if !wasKilled(err) {
			t.Fatalf("round %d (%s): child exit %v, want SIGKILL\n%s", i, name, err, tail(c.output()))
		}
		if r.hook != "" && !strings.Contains(c.output(), fault.Marker(r.hook)) {
			t.Fatalf("round %d: hook %s did not fire (inconclusive)\n%s", i, r.hook, tail(c.output()))
		}
		s := inspect(t, stores, dir)
		t.Logf("round %d (%s, skip %d): %d of %d rows committed, planned %d, commit entry %d, table batch %d",
			i, name, skip, s.rows, killTotal, s.planned, s.committed, s.tableBatch)
		if s.rows <= 0 || s.rows >= killTotal {
			t.Fatalf("round %d (%s): inconclusive: kill landed with %d of %d rows committed, want strictly between",
				i, name, s.rows, killTotal)
		}
		if s.rows < prev {
			t.Fatalf("round %d: committed rows went back from %d to %d", i, prev, s.rows)
		}
		prev = s.rows
		if r.check != nil {
			if err := r.check(s); err != nil {
				t.Fatalf("round %d (%s): inconclusive: %v", i, name, err)
			}
		}
	}

	c := startChild(t, stores, dir, "drain", "", 0)
	if err := c.wait(t, 180*time.Second); err != nil {
		t.Fatalf("drain: %v\n%s", err, tail(c.output()))
	}
	lake := openLakeWith(t, stores.lakeConfig(dir))
	defer lake.Close()
	seen := map[pair]int{}
	for _, p := range bronzePairs(t, lake) {
		seen[p]++
	}
	for p, n := range seen {
		if !held[p] {
			t.Errorf("bronze holds %v, a record the broker does not", p)
		} else if n != 1 {
			t.Errorf("bronze holds %v %d times", p, n)
		}
	}
	if len(seen) != len(held) {
		t.Errorf("bronze holds %d distinct records of the broker's %d", len(seen), len(held))
	}
	s := inspect(t, stores, dir)
	rows, _ := progressRows(t, lake, BronzeQuery)
	for b := int64(0); b <= s.committed; b++ {
		if rows[b] != 1 {
			t.Errorf("progress rows of batch %d: got %d, want 1", b, rows[b])
		}
	}
	if len(rows) != int(s.committed+1) {
		t.Errorf("progress batches: got %d, want %d", len(rows), s.committed+1)
	}
}
