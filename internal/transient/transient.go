// Package transient says which errors may pass by themselves: storage that
// is full (ENOSPC, a disk quota, the appliance's own disk reserve) or
// unreachable for a while (a refused or cut connection, a timeout, an HTTP
// 5xx, 408 or 429 from S3). Whoever meets one pauses the work with backoff
// and a loud health signal and then retries it, instead of stopping the
// appliance; nothing is lost, because every retried step is one the
// exactly-once protocol already replays after a crash. Everything else
// (a corrupt file, a refused credential, a bug) is not transient.
//
// It owns no state; nothing here survives a crash.
package transient

import (
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"time"
)

// Error is implemented by errors that know they are transient (Transient
// reports true), such as the broker's disk-reserve refusal.
type Error interface {
	error
	Transient() bool
}

// Is reports whether err may pass by itself, so the step that failed is
// worth retrying. A nil error is not transient. The caller checks its own
// context first: a cancelled context is never a reason to retry.
func Is(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var te Error
	if errors.As(err, &te) && te.Transient() {
		return true
	}
	// The AWS SDK's send failures (connection refused or reset, DNS):
	// smithy-go's RequestSendError.
	var ce interface{ ConnectionError() bool }
	if errors.As(err, &ce) && ce.ConnectionError() {
		return true
	}
	// An HTTP answer that says "later": smithy-go's ResponseError.
	var he interface{ HTTPStatusCode() int }
	if errors.As(err, &he) {
		switch c := he.HTTPStatusCode(); {
		case c >= 500, c == 408, c == 429:
			return true
		}
		return false
	}
	// A network operation that failed, or timed out (syscall.Errno is a
	// net.Error too, so only its timeouts count here).
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Backoff is the wait before retry attempt n (1, 2, ...): 1 s doubling to
// at most a minute, with up to a quarter of jitter off.
func Backoff(n int) time.Duration {
	d := time.Second << min(max(n-1, 0), 6)
	d = min(d, time.Minute)
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}
