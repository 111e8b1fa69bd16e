package stream

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/crashtest"
	"lakehouse/table"
)

// envKillSoak, set, adds random kills to TestBronzeKill.
const envKillSoak = "LAKEHOUSE_STREAM_SOAK"

// killStores is where a kill test's broker and warehouse are: broker.db and
// a local warehouse in the data directory, or a Kafka cluster and an S3
// bucket the parent serves on loopback.
type killStores struct {
	kafka []string // seeds; nil: broker.db
	s3    string   // endpoint; "": local
}

// killStoresOf reads the stores from a child's settings (settings).
func killStoresOf(s crashtest.Spec) killStores {
	var k killStores
	if v := s.Get("kafka"); v != "" {
		k.kafka = strings.Split(v, ",")
	}
	k.s3 = s.Get("s3")
	return k
}

// settings are the child's settings that name the stores.
func (k killStores) settings() []string {
	return []string{"kafka", strings.Join(k.kafka, ","), "s3", k.s3}
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

// bronzeKillChild is the child's body (crashtest role "kill"; settings
// dir, mode, hook, skip and the stores): the broker and bronze in one
// process, running until killed or, in mode "drain", until bronze holds
// the backlog.
func bronzeKillChild(s crashtest.Spec) error {
	ctx := context.Background()
	dir := s.Get("dir")
	stores := killStoresOf(s)
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
	if s.Get("hook") != "" {
		// Progress flushes also commit through the table's hooks: keep them
		// out of the way so the armed hook fires in a bronze batch.
		cfg.ProgressEvery, cfg.ProgressInterval = 1<<30, time.Hour
	}
	s.Arm()
	q, err := NewBronze(db, lake, cfg)
	if err != nil {
		return err
	}
	if s.Get("mode") == "drain" {
		return q.Drain(ctx)
	}
	return q.Run(ctx)
}

// startChild runs broker + bronze as a child in mode ("run" or "drain"),
// with hook armed to fire after skip hits ("" for none).
func startChild(t *testing.T, stores killStores, dir, mode, hook string, skip int) *crashtest.Child {
	t.Helper()
	settings := append([]string{"dir", dir, "mode", mode, "hook", hook, "skip", strconv.Itoa(skip)}, stores.settings()...)
	return crashtest.Start(t, "kill", settings...)
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
			if !c.WaitFor(`msg="stream batch"`, 1, 60*time.Second) {
				t.Fatalf("round %d: no batch within 60s (exited: %v)\n%s", i, c.Exited(), crashtest.Tail(c.Output(), 30))
			}
			c.KillAfter(time.Duration(rng.IntN(150)) * time.Millisecond)
		}
		err := c.Wait(t, 90*time.Second)
		if !crashtest.WasKilled(err) {
			t.Fatalf("round %d (%s): child exit %v, want SIGKILL\n%s", i, name, err, crashtest.Tail(c.Output(), 30))
		}
		if r.hook != "" && !c.Fired(r.hook) {
			t.Fatalf("round %d: hook %s did not fire (inconclusive)\n%s", i, r.hook, crashtest.Tail(c.Output(), 30))
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
	if err := c.Wait(t, 180*time.Second); err != nil {
		t.Fatalf("drain: %v\n%s", err, crashtest.Tail(c.Output(), 30))
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
