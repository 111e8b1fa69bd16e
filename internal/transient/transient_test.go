package transient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"
	"testing"
	"time"
)

type statusErr int

func (s statusErr) Error() string       { return fmt.Sprintf("http %d", int(s)) }
func (s statusErr) HTTPStatusCode() int { return int(s) }

type sendErr struct{}

func (sendErr) Error() string         { return "send request failed" }
func (sendErr) ConnectionError() bool { return true }

type reserveErr struct{}

func (reserveErr) Error() string   { return "disk reserve reached" }
func (reserveErr) Transient() bool { return true }

// TestIs: full or unreachable storage is transient however deeply it is
// wrapped; a refused credential, a missing file, corruption and a
// cancelled context are not.
func TestIs(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("commit batch 3: write data file: %w", err) }
	for _, err := range []error{
		&fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC},
		syscall.EDQUOT,
		statusErr(503), statusErr(500), statusErr(429), statusErr(408),
		sendErr{},
		reserveErr{},
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		syscall.ECONNRESET,
	} {
		if !Is(wrap(err)) {
			t.Errorf("Is(%v) = false, want true", err)
		}
	}
	for _, err := range []error{
		nil,
		statusErr(403), statusErr(404), statusErr(400),
		&fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist},
		syscall.EIO,
		errors.New("corrupt checkpoint"),
		context.Canceled,
	} {
		if err != nil {
			err = wrap(err)
		}
		if Is(err) {
			t.Errorf("Is(%v) = true, want false", err)
		}
	}
}

func TestBackoff(t *testing.T) {
	prev := time.Duration(0)
	for n := 1; n <= 10; n++ {
		d := Backoff(n)
		if d <= 0 || d > time.Minute {
			t.Fatalf("Backoff(%d) = %v", n, d)
		}
		if n <= 6 && d < prev/2 {
			t.Fatalf("Backoff(%d) = %v after %v: not growing", n, d, prev)
		}
		prev = d
	}
	if d := Backoff(20); d < 45*time.Second {
		t.Fatalf("Backoff(20) = %v, want about a minute", d)
	}
}
