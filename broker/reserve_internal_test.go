package broker

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/internal/transient"
)

// TestDiskReserveRefusesAppends: while the file system has less free space
// than DiskReserve, Append is refused with a transient ReserveError and
// nothing is stored; trims still run; once space is freed the same batch
// appends.
func TestDiskReserveRefusesAppends(t *testing.T) {
	var free atomic.Int64
	free.Store(1 << 30)
	orig := freeBytes
	freeBytes = func(string) (int64, error) { return free.Load(), nil }
	defer func() { freeBytes = orig }()

	ctx := context.Background()
	d, err := Open(filepath.Join(t.TempDir(), "broker.db"), Options{DiskReserve: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	batch := Batch{Records: []Record{{Topic: "t", Partition: 0, Timestamp: time.Now(), Value: []byte("v")}}}
	if _, err := d.Append(ctx, batch); err != nil {
		t.Fatalf("append with room: %v", err)
	}
	free.Store(10 << 20)
	_, err = d.Append(ctx, batch)
	var re *ReserveError
	if !errors.Is(err, ErrDiskReserve) || !errors.As(err, &re) || !transient.Is(err) {
		t.Fatalf("append below the reserve: %v, want a transient ReserveError", err)
	}
	if re.Free != 10<<20 || re.Reserve != 64<<20 {
		t.Errorf("reserve error figures: %+v", re)
	}
	offs, err := d.Offsets(ctx, "t")
	if err != nil || offs[0].End != 1 {
		t.Fatalf("a refused append stored something: %+v, %v", offs, err)
	}
	if n, err := d.Retain(ctx, "t", Retention{MaxBytes: 0, MaxAge: time.Nanosecond, Now: time.Now().Add(time.Hour)}); err != nil || n != 1 {
		t.Fatalf("retention below the reserve: trimmed %d, %v", n, err)
	}
	free.Store(1 << 30)
	if _, err := d.Append(ctx, batch); err != nil {
		t.Fatalf("append once space is back: %v", err)
	}
}
