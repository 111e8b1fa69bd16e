package appliance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"lakehouse/ingest"
)

// ResetPosition rewrites where ingest resumes the stream (r) through the
// broker's metadata, in one transaction, and writes the old and the new
// position to w. It needs the broker's file lock, so it fails while the
// appliance runs (which reads the position once, at start).
func (c *Store) ResetPosition(ctx context.Context, r ingest.Reset, w io.Writer) error {
	db, err := c.OpenBrokerExisting(ctx, false)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return fmt.Errorf("the appliance holds %s: stop it first (the position is read once, at start): %w", c.BrokerPath(), err)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	old, err := ingest.ResetPosition(ctx, db, ingest.DefaultSource, r)
	if err != nil {
		return err
	}
	now := ""
	switch {
	case r.To != "":
		now = "resume after " + strconv.Quote(r.To)
	case r.Latest:
		now = "no position: the next start reads from the live end"
	default:
		now = "no position: the next start reads from " + r.Since.UTC().Format(time.RFC3339)
	}
	if len(old) > 200 {
		old = old[:200] + fmt.Sprintf("... (%d bytes)", len(old))
	}
	fmt.Fprintf(w, "resume position of %s in %s: was %s; now %s\n", ingest.DefaultSource, c.BrokerName(), strconv.Quote(old), now)
	return nil
}
