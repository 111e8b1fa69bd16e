package boltfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"lakehouse/internal/procmem"
)

// makeFile writes a bbolt file with what the broker and the catalog hold:
// nested buckets (inline and not), enough keys for branch pages, values
// larger than a page (overflow pages), and deleted keys (free pages).
func makeFile(t *testing.T, opts *bolt.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.db")
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		top, err := tx.CreateBucket([]byte("top"))
		if err != nil {
			return err
		}
		for p := range 4 {
			b, err := top.CreateBucket([]byte(fmt.Sprintf("part-%d", p)))
			if err != nil {
				return err
			}
			for i := range 600 {
				if err := b.Put([]byte(fmt.Sprintf("%08d", i)), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
					return err
				}
			}
		}
		if _, err := top.CreateBucket([]byte("small")); err != nil { // stays inline
			return err
		}
		return top.Put([]byte("big"), bytes.Repeat([]byte("x"), 20_000))
	})
	if err == nil {
		err = db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("top")).Bucket([]byte("part-0"))
			for i := range 200 {
				if err := b.Delete([]byte(fmt.Sprintf("%08d", i))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAll reads every key and value of every bucket, as a reader of the
// whole file would, and returns a digest of them.
func readAll(db *bolt.DB) (sum [32]byte, err error) {
	h := sha256.New()
	var each func(b *bolt.Bucket) error
	each = func(b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			h.Write(k)
			if v == nil {
				return each(b.Bucket(k))
			}
			h.Write(v)
			return nil
		})
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			h.Write(name)
			return each(b)
		})
	})
	copy(sum[:], h.Sum(nil))
	return sum, err
}

// appendEach appends a key after the last one of every part-N bucket, as
// the broker's appends do (copy-on-write reads the path to the last leaf).
func appendEach(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		for p := range 4 {
			b := tx.Bucket([]byte("top")).Bucket([]byte(fmt.Sprintf("part-%d", p)))
			if err := b.Put([]byte("99999999"), []byte("appended")); err != nil {
				return err
			}
		}
		return nil
	})
}

func garble(t *testing.T, path string, healthy []byte, pg uint64, pageSize uint32) {
	t.Helper()
	b := bytes.Clone(healthy)
	copy(b[int64(pg)*int64(pageSize):], bytes.Repeat([]byte{0xA5, 0x17, 0xFF, 0x03}, int(pageSize)/4))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func newestMeta(t *testing.T, path string) meta {
	t.Helper()
	var m meta
	if err := inspect(path, 0, func(_ *os.File, nm meta) error { m = nm; return nil }); err != nil {
		t.Fatal(err)
	}
	return m
}

// damagedOrNil fails the test unless err is nil or ErrDamaged, and says
// which.
func damagedOrNil(t *testing.T, what string, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, ErrDamaged) {
		t.Fatalf("%s: %v, want nil or ErrDamaged", what, err)
	}
	return err != nil
}

// TestGarbledPageRefusedAtOpenOrFirstRead garbles each page of a file
// with a persisted freelist in turn (the broker's options and the
// catalog's): Open (read-write and read-only) refuses the root bucket's
// page and the freelist's at once; any other page the tree reaches is
// refused by the first transaction that reads it (a read of everything,
// an append), run under Guard; nothing panics or faults. Check refuses
// exactly the pages one of them refuses. An empty file, a truncated one
// and a missing one behave as documented.
func TestGarbledPageRefusedAtOpenOrFirstRead(t *testing.T) {
	for name, opts := range map[string]*bolt.Options{
		"broker":  {FreelistType: bolt.FreelistMapType, PageSize: 4096},
		"catalog": nil,
	} {
		t.Run(name, func(t *testing.T) {
			ro := &bolt.Options{ReadOnly: true}
			if opts != nil {
				ro.FreelistType = opts.FreelistType
			}
			path := makeFile(t, opts)
			healthy, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m := newestMeta(t, path)
			if m.freelist == noFreelist {
				t.Fatal("inconclusive: the freelist is not persisted")
			}
			fl, err := newWalker(bytes.NewReader(healthy), m).freelist(m.freelist, false)
			if err != nil || len(fl) < 10 {
				t.Fatalf("inconclusive: %d free pages (%v)", len(fl), err)
			}
			db, err := Open(path, 0o600, opts)
			if err != nil {
				t.Fatalf("healthy file: %v", err)
			}
			want, err := readAll(db)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			if s, err := Check(path, 0); err != nil || s.Free != uint64(len(fl))+1 || s.Reachable+s.Free+2 != s.Pages {
				t.Fatalf("healthy file: Check %+v, %v (%d ids in the freelist)", s, err, len(fl))
			}
			var atOpen, byRead, byCheck int
			for pg := uint64(2); pg < m.pgid; pg++ {
				garble(t, path, healthy, pg, m.pageSize)
				_, cerr := Check(path, 0)
				checked := damagedOrNil(t, fmt.Sprintf("page %d garbled: Check", pg), cerr)
				refused, read := false, false
				for _, o := range []*bolt.Options{ro, opts} {
					db, err := Open(path, 0o600, o)
					if damagedOrNil(t, fmt.Sprintf("page %d garbled: Open", pg), err) {
						refused = true
						continue
					}
					got, err := Guard(func() error { _, err := readAll(db); return err }), error(nil)
					if !damagedOrNil(t, fmt.Sprintf("page %d garbled: read", pg), got) && (o == nil || !o.ReadOnly) {
						err = Guard(func() error { return appendEach(db) })
						damagedOrNil(t, fmt.Sprintf("page %d garbled: append", pg), err)
					}
					read = read || got != nil || err != nil
					if err := db.Close(); err != nil {
						t.Fatalf("page %d garbled: close: %v", pg, err)
					}
				}
				if refused {
					atOpen++
				} else if read {
					byRead++
				}
				if checked {
					byCheck++
				}
				if checked != (refused || read) {
					t.Errorf("page %d garbled: Check refused it %v, Open %v, a transaction %v", pg, checked, refused, read)
				}
				if (pg == m.root || pg == m.freelist) && !refused {
					t.Errorf("page %d (the root's or the freelist's) garbled: Open accepted it", pg)
				}
			}
			t.Logf("%d pages: %d refused at Open, %d by the first transaction reading them, %d by Check", m.pgid-2, atOpen, byRead, byCheck)
			if atOpen < 2 || byRead < 10 {
				t.Fatalf("inconclusive: %d refused at Open, %d by a transaction", atOpen, byRead)
			}
			// The healthy file again reads the same.
			if err := os.WriteFile(path, healthy, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err = Open(path, 0o600, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := readAll(db); err != nil || got != want {
				t.Fatalf("healthy file read again: %v", err)
			}
			db.Close()

			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(path, 0o600, opts); !errors.Is(err, ErrEmpty) {
				t.Errorf("empty file: %v, want ErrEmpty", err)
			}
			if err := os.WriteFile(path, healthy[:int64(m.pgid)*int64(m.pageSize)/2], 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(path, 0o600, opts); !errors.Is(err, ErrDamaged) {
				t.Errorf("file cut to half its pages: %v, want ErrDamaged", err)
			}
			if _, err := Open(filepath.Join(t.TempDir(), "none.db"), 0o600, ro); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("read-only open of a missing file: %v, want ErrNotExist", err)
			}
			if _, err := Check(filepath.Join(t.TempDir(), "none.db"), 0); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Check of a missing file: %v, want ErrNotExist", err)
			}
		})
	}
}

// TestUnpersistedFreelistWalkedOnce: a file written with NoFreelistSync
// (the broker before it persisted its freelist) opens: read-only without
// a change to the file; read-write after Open has checked every page the
// tree reaches (bbolt then walks them in a goroutine of its own, where a
// damaged page is a panic nothing recovers: each garbled page in use is
// refused by Open), and bbolt persists the freelist: the next Open reads
// it instead, the data is unchanged and Check agrees with the freelist.
func TestUnpersistedFreelistWalkedOnce(t *testing.T) {
	legacy := &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, PageSize: 4096}
	now := &bolt.Options{FreelistType: bolt.FreelistMapType, PageSize: 4096}
	path := makeFile(t, legacy)
	healthy, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := newestMeta(t, path)
	if m.freelist != noFreelist {
		t.Fatalf("inconclusive: NoFreelistSync wrote freelist page %d", m.freelist)
	}
	refused := 0
	for pg := uint64(2); pg < m.pgid; pg++ {
		garble(t, path, healthy, pg, m.pageSize)
		_, cerr := Check(path, 0)
		checked := damagedOrNil(t, fmt.Sprintf("page %d garbled: Check", pg), cerr)
		db, err := Open(path, 0o600, now)
		if damagedOrNil(t, fmt.Sprintf("page %d garbled: Open", pg), err) {
			refused++
		} else {
			db.Close()
		}
		if checked != (err != nil) {
			t.Errorf("page %d garbled: Check refused it %v, the converting Open %v", pg, checked, err != nil)
		}
	}
	if refused < 10 {
		t.Fatalf("inconclusive: only %d of %d garbled pages were in use", refused, m.pgid-2)
	}
	t.Logf("%d of %d pages refused when garbled", refused, m.pgid-2)

	if err := os.WriteFile(path, healthy, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := readAll(db)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if b, _ := os.ReadFile(path); !bytes.Equal(b, healthy) {
		t.Fatal("a read-only open changed the file")
	}
	db, err = Open(path, 0o600, now)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	m = newestMeta(t, path)
	if m.freelist == noFreelist {
		t.Fatal("the writable open did not persist the freelist")
	}
	s, err := Check(path, 0)
	if err != nil || s.Free < 10 {
		t.Fatalf("after the conversion: Check %+v, %v", s, err)
	}
	db, err = Open(path, 0o600, now)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := readAll(db); err != nil || got != want {
		t.Fatalf("after the conversion the data differs (%v)", err)
	}
}

// TestOpenReadsAFewPages: opening a 64 MiB file with a persisted freelist
// of thousands of pages (read-write, as the broker and the catalog do) and
// committing a write reads the meta, root and freelist pages only: the
// bytes read and the file's pages resident in this process stay under
// 1 MiB (before: the whole file, twice). The same counters see a full
// Check read the file and a full read make it resident, so they measure
// what they claim.
func TestOpenReadsAFewPages(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "big.db")
	opts := &bolt.Options{FreelistType: bolt.FreelistMapType, PageSize: 8192}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("r"), 1300)
	for batch := range 50 {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("log"))
			if err != nil {
				return err
			}
			b.FillPercent = 1
			for i := range 1000 {
				if err := b.Put([]byte(fmt.Sprintf("%016d", batch*1000+i)), val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err = db.Update(func(tx *bolt.Tx) error { // trim the front: a freelist of thousands of pages
		c := tx.Bucket([]byte("log")).Cursor()
		for k, _ := c.First(); k != nil && string(k) < fmt.Sprintf("%016d", 20_000); k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	free := db.Stats().FreePageN + db.Stats().PendingPageN
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() < 60<<20 || free < 2000 {
		t.Fatalf("inconclusive: a file of %d bytes with %d free pages (%v)", st.Size(), free, err)
	}

	read0 := readChars(t)
	db, err = Open(path, 0o600, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := Guard(func() error {
		return db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("log")).Put([]byte("z"), val) })
	}); err != nil {
		t.Fatal(err)
	}
	read, resident := readChars(t)-read0, mapped(t, path)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("file %d MiB, %d free pages: open and a commit read %d KiB, left %d KiB resident", st.Size()>>20, free, read>>10, resident>>10)
	if read > 1<<20 || resident > 1<<20 {
		t.Errorf("open and a commit read %d bytes and left %d resident, want both under 1 MiB", read, resident)
	}

	// The counters see a whole read.
	read0 = readChars(t)
	if _, err := Check(path, 0); err != nil {
		t.Fatal(err)
	}
	if read := readChars(t) - read0; read < st.Size()/2 {
		t.Errorf("Check read %d bytes of a %d-byte file: the read counter misses reads", read, st.Size())
	}
	db, err = Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := readAll(db); err != nil {
		t.Fatal(err)
	}
	if resident := mapped(t, path); resident < st.Size()/4 {
		t.Errorf("a full read left %d bytes of a %d-byte file resident: the resident counter misses the map", resident, st.Size())
	}
}

func readChars(t *testing.T) int64 {
	t.Helper()
	n, err := procmem.ReadChars()
	if err != nil {
		t.Skipf("no I/O counters: %v", err)
	}
	return n
}

func mapped(t *testing.T, path string) int64 {
	t.Helper()
	n, err := procmem.MappedResident(path)
	if err != nil {
		t.Skipf("no process mappings: %v", err)
	}
	return n
}

// TestOpenWaitsForAWriter: while another handle holds the file for
// writing, Open and Check read no page (a file being written is "locked",
// never "damaged") and give up after the timeout with bbolt's ErrTimeout.
func TestOpenWaitsForAWriter(t *testing.T) {
	path := makeFile(t, nil)
	w, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, ro := range []bool{true, false} {
		_, err := Open(path, 0o600, &bolt.Options{ReadOnly: ro, Timeout: 200 * time.Millisecond})
		if !errors.Is(err, bolterrors.ErrTimeout) {
			t.Errorf("read-only %v, file held by a writer: %v, want ErrTimeout", ro, err)
		}
	}
	if _, err := Check(path, 200*time.Millisecond); !errors.Is(err, bolterrors.ErrTimeout) {
		t.Errorf("Check of a file held by a writer: %v, want ErrTimeout", err)
	}
}
