package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// makeFile writes a bbolt file with what the broker and the catalog hold:
// nested buckets (inline and not), enough keys for branch pages, and values
// larger than a page (overflow pages).
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
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenRefusesEveryGarbledPage garbles each page in use in turn (and
// every free one): Open returns ErrDamaged for a page the tree reaches and
// never lets bbolt panic or fault; a healthy file, an empty one and a
// truncated one behave as documented.
func TestOpenRefusesEveryGarbledPage(t *testing.T) {
	opts := &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, PageSize: 4096}
	path := makeFile(t, opts)
	healthy, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, 0o600, opts)
	if err != nil {
		t.Fatalf("healthy file: %v", err)
	}
	db.Close()
	m, err := precheck(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for pg := uint64(2); pg < m.pgid; pg++ {
		b := bytes.Clone(healthy)
		copy(b[int64(pg)*int64(m.pageSize):], bytes.Repeat([]byte{0xA5, 0x17, 0xFF, 0x03}, 1024))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(path, 0o600, opts)
		switch {
		case err == nil:
			db.Close() // a free page: nothing reaches it
		case errors.Is(err, ErrDamaged):
			refused++
		default:
			t.Fatalf("page %d garbled: %v, want nil or ErrDamaged", pg, err)
		}
	}
	if refused < 10 {
		t.Fatalf("inconclusive: only %d of %d garbled pages were in use", refused, m.pgid-2)
	}
	t.Logf("%d of %d pages refused when garbled", refused, m.pgid-2)

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
	ro := &bolt.Options{ReadOnly: true}
	if _, err := Open(filepath.Join(t.TempDir(), "none.db"), 0o600, ro); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open of a missing file: %v, want ErrNotExist", err)
	}
}

// TestOpenWaitsForAWriter: while another handle holds the file for
// writing, Open reads no page (a file being written is "locked", never
// "damaged") and gives up after the timeout with bbolt's ErrTimeout.
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
}
