package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/syncbuf"
	"lakehouse/table"
)

// TestCorruptFilesRefused: each bbolt file of a data directory (broker.db,
// catalog.db) emptied, truncated to a quarter, or with 4 KiB garbled in
// the root bucket's page (a page every open reads): every command (run,
// verify, topics, query) exits non-zero naming the file, never panics or
// faults (the commands run as child processes, so a SIGBUS would show),
// and changes no file of the data directory (run included: it refuses
// before it writes). A page deeper in the file: TestCorruptLeafFound.
func TestCorruptFilesRefused(t *testing.T) {
	src := t.TempDir()
	makeSmallLake(t, src)
	damages := []struct {
		name string
		do   func(t *testing.T, path string)
	}{
		{"empty", func(t *testing.T, path string) { must(t, os.Truncate(path, 0)) }},
		{"quarter", func(t *testing.T, path string) {
			// A quarter of the pages in use (bbolt files are preallocated:
			// a quarter of the file can still hold every page).
			m := newestMeta(t, path)
			must(t, os.Truncate(path, m.pgid*m.pageSize/4))
		}},
		{"garbled-root-page", garbleRootPage},
	}
	commands := [][]string{
		{"run", "--no-ingest", "--http", "off"},
		{"verify"},
		{"topics"},
		{"query", "SELECT count(*) FROM bronze.recentchange"},
	}
	for _, file := range []string{"broker.db", "catalog.db"} {
		for _, d := range damages {
			for _, cmd := range commands {
				if file == "catalog.db" && cmd[0] == "topics" || file == "broker.db" && cmd[0] == "query" {
					continue // topics reads only the broker, query only the lake
				}
				t.Run(file+"/"+d.name+"/"+cmd[0], func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), "data")
					copyDir(t, src, dir)
					d.do(t, filepath.Join(dir, file))
					before := hashTree(t, dir)
					args := append([]string{cmd[0], "--data", dir}, cmd[1:]...)
					out, err := selfCommand(args...).CombinedOutput()
					if err == nil {
						t.Fatalf("%v exited 0 on a damaged %s:\n%s", cmd, file, out)
					}
					text := string(out)
					for _, bad := range []string{"panic:", "fatal error", "goroutine ", "SIGBUS", "SIGSEGV"} {
						if strings.Contains(text, bad) {
							t.Fatalf("%v crashed (%q) on a damaged %s:\n%s", cmd, bad, file, text)
						}
					}
					if !strings.Contains(text, filepath.Join(dir, file)) {
						t.Errorf("%v does not name %s:\n%s", cmd, filepath.Join(dir, file), text)
					}
					if after := hashTree(t, dir); after != before {
						t.Errorf("%v changed the data directory:\n%s", cmd, diffTrees(before, after))
					}
				})
			}
		}
	}
}

// TestCorruptLeafFound: a garbled leaf of records in broker.db, a page no
// open reads (an open reads a few pages whatever the log's size), is found
// by the first command that reads it: `verify` by its full check of every
// page, `run` when bronze reads the partition; each exits non-zero naming
// the file, never with a panic or a fault, and broker.db is not written.
// `topics`, which reads only the partitions' offsets, lists them.
func TestCorruptLeafFound(t *testing.T) {
	src := t.TempDir()
	makeSmallLake(t, src)
	garbleRecordLeaf(t, filepath.Join(src, "broker.db"))
	for _, cmd := range [][]string{
		{"verify"},
		{"run", "--no-ingest", "--http", "off"},
		{"topics"},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			copyDir(t, src, dir)
			path := filepath.Join(dir, "broker.db")
			before, err := os.ReadFile(path)
			must(t, err)
			out, err := selfCommand(append([]string{cmd[0], "--data", dir}, cmd[1:]...)...).CombinedOutput()
			text := string(out)
			for _, bad := range []string{"panic:", "fatal error", "goroutine ", "SIGBUS", "SIGSEGV"} {
				if strings.Contains(text, bad) {
					t.Fatalf("%v crashed (%q) on a garbled leaf:\n%s", cmd, bad, text)
				}
			}
			switch {
			case cmd[0] == "topics" && (err != nil || !strings.Contains(text, "recentchange")):
				t.Fatalf("topics: %v\n%s", err, text)
			case cmd[0] != "topics" && (err == nil || !strings.Contains(text, path) || !strings.Contains(text, "damaged bbolt file")):
				t.Fatalf("%v on a garbled leaf: %v, want a non-zero exit naming %s as damaged:\n%s", cmd, err, path, text)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("%v wrote the damaged broker.db", cmd)
			}
		})
	}
}

// garbleRecordLeaf overwrites 4 KiB of the first leaf of records (a leaf
// whose keys are 8-byte offsets) of the broker file at path.
func garbleRecordLeaf(t *testing.T, path string) {
	t.Helper()
	var leaves []int
	var pageSize int
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	must(t, err)
	must(t, db.View(func(tx *bolt.Tx) error {
		pageSize = tx.DB().Info().PageSize
		for id := 2; int64(id)*int64(pageSize) < tx.Size(); id++ {
			if p, err := tx.Page(id); err == nil && p != nil && p.Type == "leaf" && p.Count > 1 {
				leaves = append(leaves, id)
			}
		}
		return nil
	}))
	must(t, db.Close())
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	for _, id := range leaves {
		hdr := make([]byte, 16+16)
		_, err := f.ReadAt(hdr, int64(id)*int64(pageSize))
		must(t, err)
		if binary.LittleEndian.Uint32(hdr[16+8:]) == 8 { // the first element's key size
			_, err := f.WriteAt(bytes.Repeat([]byte{0xA5, 0x17, 0xFF, 0x03}, 1024), int64(id)*int64(pageSize))
			must(t, err)
			return
		}
	}
	t.Fatalf("inconclusive: no leaf of records among the leaves %v", leaves)
}

// makeSmallLake writes a broker with a few records and a lake with its
// tables into dir.
func makeSmallLake(t *testing.T, dir string) {
	ctx := context.Background()
	must(t, os.MkdirAll(dir, 0o755))
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	must(t, err)
	must(t, db.CreateTopic(ctx, ingest.DefaultTopic, ingest.DefaultPartitions))
	must(t, db.CreateTopic(ctx, ingest.DefaultDLQTopic, 1))
	var recs []broker.Record
	for i := range 200 {
		recs = append(recs, broker.Record{Topic: ingest.DefaultTopic, Partition: broker.AnyPartition, Timestamp: time.Now(),
			Value: bytes.Repeat([]byte{byte('a' + i%26)}, 300)})
	}
	_, err = db.Append(ctx, broker.Batch{Records: recs})
	must(t, err)
	must(t, db.Close())
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	must(t, err)
	must(t, lake.EnsureTables(ctx))
	must(t, lake.Close())
}

type boltMeta struct{ pageSize, root, pgid, txid int64 }

// newestMeta reads the valid meta page with the highest txid (the one
// bbolt uses).
func newestMeta(t *testing.T, path string) boltMeta {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	var best boltMeta
	for _, off := range []int64{0, -1} {
		hdr := make([]byte, 16+64)
		if off < 0 {
			off = best.pageSize
			if off == 0 {
				off = 4096
			}
		}
		if _, err := f.ReadAt(hdr, off); err != nil {
			continue
		}
		m := hdr[16:]
		le := binary.LittleEndian
		if le.Uint32(m) != 0xED0CDAED {
			continue
		}
		bm := boltMeta{pageSize: int64(le.Uint32(m[8:])), root: int64(le.Uint64(m[16:])), pgid: int64(le.Uint64(m[40:])), txid: int64(le.Uint64(m[48:]))}
		if best.pageSize == 0 || bm.txid > best.txid {
			best = bm
		}
	}
	if best.pageSize < 1024 || best.root < 2 || best.pgid <= best.root {
		t.Fatalf("inconclusive: no usable meta page in %s (%+v)", path, best)
	}
	return best
}

// garbleRootPage overwrites 4 KiB of the page bbolt's current meta page
// names as the root bucket (a page in use in any bbolt file).
func garbleRootPage(t *testing.T, path string) {
	m := newestMeta(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	junk := bytes.Repeat([]byte{0xA5, 0x17, 0xFF, 0x03}, 1024)
	_, err = f.WriteAt(junk, m.root*m.pageSize)
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	must(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	}))
}

// hashTree lists every file under dir with its size and SHA-256, sorted
// by the walk.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			b.WriteString(rel + "/\n")
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		b.WriteString(rel + " " + strconv.Itoa(len(data)) + " " + hex.EncodeToString(sum[:]) + "\n")
		return nil
	}))
	return b.String()
}

func diffTrees(before, after string) string {
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	seen := map[string]bool{}
	for _, l := range b {
		seen[l] = true
	}
	var out []string
	for _, l := range a {
		if !seen[l] {
			out = append(out, "+ "+l)
		}
	}
	now := map[string]bool{}
	for _, l := range a {
		now[l] = true
	}
	for _, l := range b {
		if !now[l] {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCorruptCheckpointSaysHowToRecover: a garbled checkpoint entry (a byte
// of the first record of the entry log) stops its query with an error
// naming the file and the recovery step (moving the query's checkpoint
// away), and the step works: after it, the appliance starts and the query
// continues from its table's marker.
func TestCorruptCheckpointSaysHowToRecover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	makeSmallLake(t, dir)
	// One start lands the broker's records in bronze (batch 0 and its
	// checkpoint entries), then SIGTERM.
	runFor(t, dir, "rows_in=200")
	entry := filepath.Join(dir, "checkpoints", "bronze", "log")
	data, err := os.ReadFile(entry)
	if err != nil || len(data) < 64 {
		t.Fatalf("inconclusive: no entry log to garble (%d bytes): %v", len(data), err)
	}
	data[20] ^= 0xFF // inside the first record: batch 0's offset entry
	must(t, os.WriteFile(entry, data, 0o644))
	out, err := selfCommand("run", "--data", dir, "--no-ingest", "--http", "off").CombinedOutput()
	if err == nil {
		t.Fatalf("run exited 0 with a garbled checkpoint entry:\n%s", out)
	}
	for _, want := range []string{entry, "move the query's checkpoint " + filepath.Join(dir, "checkpoints", "bronze") + " away"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not say %q:\n%s", want, out)
		}
	}
	must(t, os.Rename(filepath.Join(dir, "checkpoints", "bronze"), filepath.Join(t.TempDir(), "bronze-checkpoint")))
	runFor(t, dir, "appliance started")
	out, err = selfCommand("verify", "--data", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "bronze 200 rows, 200 distinct offsets") {
		t.Fatalf("after the recovery step, verify: %v\n%s", err, out)
	}
}

// runFor runs the appliance on dir (no ingest) until its log says want,
// then stops it with SIGTERM.
func runFor(t *testing.T, dir, want string) {
	t.Helper()
	cmd := selfCommand("run", "--data", dir, "--no-ingest", "--http", "off", "--refresh", "0")
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(out.String(), want) {
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), want) {
		t.Fatalf("inconclusive: the appliance never logged %q:\n%s", want, out.String())
	}
}

// TestCorruptSilverStateRebuiltFromTable: silver's newest dedup state file
// garbled between two runs: the next run logs that it rebuilds the state
// from silver.edits (naming the state directory) and goes on; resends of
// events already in silver are still dropped as duplicates, and verify is
// clean (no duplicated id, none missing).
func TestCorruptSilverStateRebuiltFromTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	events := replay.Generate(41, 300).Events
	appendEvents(t, dir, events[:200]) // relocate_test.go
	runDrained(t, dir, 200, false)
	state := newestEntry(t, filepath.Join(dir, "checkpoints", "silver", "state"))
	data, err := os.ReadFile(state)
	must(t, err)
	data[len(data)/2] ^= 0xFF
	must(t, os.WriteFile(state, data, 0o644))

	appendEvents(t, dir, append(append([][]byte{}, events[100:200]...), events[200:]...)) // resends, then new
	log := runDrainedLogging(t, dir, 200, false, true)
	for _, want := range []string{"SILVER DEDUP STATE CORRUPT: rebuilding it from silver.edits", filepath.Join(dir, "checkpoints", "silver", "state"), "SILVER DEDUP STATE LOST: rebuilt from silver.edits"} {
		if !strings.Contains(log, want) {
			t.Fatalf("inconclusive: the run does not say %q:\n%s", want, log)
		}
	}
	out, err := selfCommand("verify", "--data", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "bronze 400 rows, 400 distinct offsets") {
		t.Fatalf("verify after the rebuild: %v\n%s", err, out)
	}
}

// TestCorruptSessionsStateSaysHowToRecover: a garbled sessions state file
// stops the sessions query with the checkpoint named and the way out
// (moving it away), and that way works.
func TestCorruptSessionsStateSaysHowToRecover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	events := replay.Generate(43, 300).Events
	appendEvents(t, dir, events[:200])
	runDrained(t, dir, 200, false)
	cp := filepath.Join(dir, "checkpoints", "sessions")
	state := newestEntry(t, filepath.Join(cp, "state"))
	data, err := os.ReadFile(state)
	must(t, err)
	data[len(data)/2] ^= 0xFF
	must(t, os.WriteFile(state, data, 0o644))
	appendEvents(t, dir, events[200:])
	out, err := selfCommand("run", "--data", dir, "--no-ingest", "--http", "off", "--refresh", "0", "--sessions-trigger", "0").CombinedOutput()
	if err == nil {
		t.Fatalf("run exited 0 with a garbled sessions state:\n%s", out)
	}
	for _, want := range []string{"corrupt session state", "move the query's checkpoint " + cp + " away"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not say %q:\n%s", want, out)
		}
	}
	must(t, os.Rename(cp, filepath.Join(t.TempDir(), "sessions-checkpoint")))
	runFor(t, dir, "appliance started: every query recovered its position")
	out, err = selfCommand("verify", "--data", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("verify after the recovery step: %v\n%s", err, out)
	}
}

// newestEntry is the highest-numbered file in a checkpoint directory.
func newestEntry(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	best := int64(-1)
	for _, e := range entries {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && n > best {
			best = n
		}
	}
	if best < 0 {
		t.Fatalf("inconclusive: no entry in %s", dir)
	}
	return filepath.Join(dir, strconv.FormatInt(best, 10))
}

// TestDamagedMetadataFileRefused: bronze's current metadata.json cut short
// (or deleted): every command that reads the lake (run, verify, query)
// exits non-zero naming the file and the way out (restore it from a
// backup), without a panic and without changing any file.
func TestDamagedMetadataFileRefused(t *testing.T) {
	src := t.TempDir()
	makeSmallLake(t, src)
	metaDir := filepath.Join("warehouse", "bronze.db", "recentchange", "metadata")
	for _, damage := range []string{"truncated", "deleted"} {
		for _, cmd := range [][]string{
			{"run", "--no-ingest", "--http", "off"},
			{"verify"},
			{"query", "SELECT count(*) FROM bronze.recentchange"},
		} {
			t.Run(damage+"/"+cmd[0], func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "data")
				copyDir(t, src, dir)
				current := newestMetadataFile(t, filepath.Join(dir, metaDir))
				if damage == "deleted" {
					must(t, os.Remove(current))
				} else {
					must(t, os.Truncate(current, 100))
				}
				before := hashTree(t, dir)
				out, err := selfCommand(append([]string{cmd[0], "--data", dir}, cmd[1:]...)...).CombinedOutput()
				if err == nil {
					t.Fatalf("%v exited 0 with bronze's metadata %s:\n%s", cmd, damage, out)
				}
				for _, bad := range []string{"panic:", "fatal error", "goroutine "} {
					if strings.Contains(string(out), bad) {
						t.Fatalf("%v crashed (%q):\n%s", cmd, bad, out)
					}
				}
				for _, want := range []string{current, "restore that file"} {
					if !strings.Contains(string(out), want) {
						t.Errorf("%v does not say %q:\n%s", cmd, want, out)
					}
				}
				if d := diffTrees(before, hashTree(t, dir)); d != "" {
					t.Errorf("%v changed the data directory:\n%s", cmd, d)
				}
			})
		}
	}
}

// newestMetadataFile is the metadata file with the highest version in dir.
func newestMetadataFile(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	best, bestV := "", -1
	for _, e := range entries {
		v, err := strconv.Atoi(strings.SplitN(e.Name(), "-", 2)[0])
		if err == nil && strings.HasSuffix(e.Name(), ".metadata.json") && v > bestV {
			best, bestV = filepath.Join(dir, e.Name()), v
		}
	}
	if best == "" {
		t.Fatalf("inconclusive: no metadata file in %s", dir)
	}
	return best
}
