package appliance

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"lakehouse/broker"
)

// Topics writes the broker's topics to w as a table: each partition's
// start and end offsets, the messages it holds, their bytes and what they
// take in the broker's storage, and each topic's totals. It reads through
// the appliance running on c.Data when there is one.
func (c *Store) Topics(ctx context.Context, w io.Writer) error {
	db, _, _, err := c.OpenReaders(ctx, "", true, false)
	if err != nil {
		return err
	}
	defer db.Close()
	topics, err := db.Topics(ctx)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		fmt.Fprintf(w, "no topics in %s\n", c.BrokerName())
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// bytes: key and value bytes held (blank on Kafka, which cannot tell
	// them without reading the records); stored: what they take in the
	// broker's storage (compressed; blank where the broker cannot say).
	fmt.Fprintln(tw, "topic\tpartition\tstart\tend\tmessages\tbytes\tstored\t")
	// Messages are the records a partition holds: End-Start on the
	// embedded broker, counted on Kafka, whose offsets skip.
	for _, t := range topics {
		var all, stored int64
		for _, p := range t.Partitions {
			n, err := broker.CountHeld(ctx, db, t.Name, p, p.Start, p.End)
			if err != nil {
				return err
			}
			all += n
			stored += p.Stored
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", t.Name, p.Partition, p.Start, p.End, n, bytesText(p), storedText(p.Stored))
		}
		fmt.Fprintf(tw, "%s\t%s\t\t\t%d\t\t%s\t\n", t.Name, "all", all, storedText(stored))
	}
	return tw.Flush()
}

// bytesText is the bytes column: blank where the broker cannot say.
func bytesText(p broker.PartitionOffsets) string {
	if !p.BytesKnown() {
		return ""
	}
	return strconv.FormatInt(p.Bytes, 10)
}

// storedText is the stored column: blank where the broker cannot say (0).
func storedText(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}
