package httpbound

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// TestDefaultMaxConns: the connection cap is a quarter of the open-file
// limit, between 16 and 512, so the HTTP server never takes the
// descriptors the streams and the catalog need.
func TestDefaultMaxConns(t *testing.T) {
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{{64, 16}, {1024, 256}, {4096, 512}, {1 << 20, 512}} {
		if got := DefaultMaxConns(tc.nofile); got != tc.want || uint64(got) > max(16, tc.nofile/4) {
			t.Errorf("nofile %d: cap %d, want %d", tc.nofile, got, tc.want)
		}
	}
	if b := (Bounds{}).WithDefaults(); b.MaxConns != DefaultMaxConns(NofileLimit()) || b.Read <= 0 || b.Write <= 0 || b.Idle <= 0 || b.ReadHeader <= 0 {
		t.Errorf("defaults: %+v", b)
	}
}

// TestLimiterEvictsTheIdlestAndRefusesWhenAllBusy: at the cap, a new
// connection closes the one idle longest; when every open one has a
// request in flight, the new one is closed at once and the next accepted.
func TestLimiterEvictsTheIdlestAndRefusesWhenAllBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := NewLimiter(ln, 2)
	defer lim.Close()
	accept := func() net.Conn {
		t.Helper()
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		c, err := lim.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := accept()
	time.Sleep(time.Millisecond) // a is idle longer than b
	b := accept()
	lim.Track(b, http.StateActive)
	c := accept() // evicts a, the only idle one
	if lim.Evicted.Load() != 1 || lim.Open() != 2 {
		t.Fatalf("evicted %d, open %d; want 1 and 2", lim.Evicted.Load(), lim.Open())
	}
	if _, err := a.Read(make([]byte, 1)); err == nil {
		t.Fatal("the evicted connection still reads")
	}
	lim.Track(c, http.StateActive)
	// Both busy: the next dial is refused; the one after it is accepted
	// once b ends.
	done := make(chan net.Conn)
	go func() {
		c, err := lim.Accept()
		if err == nil {
			done <- c
		}
	}()
	refusedDial, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer refusedDial.Close()
	deadline := time.Now().Add(time.Minute)
	for lim.Refused.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if lim.Refused.Load() != 1 {
		t.Fatalf("refused %d, want 1", lim.Refused.Load())
	}
	lim.Track(b, http.StateClosed)
	if _, err := net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("no connection accepted after one closed")
	}
	if lim.Peak.Load() != 2 {
		t.Fatalf("peak %d, want 2", lim.Peak.Load())
	}
}
