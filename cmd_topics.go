package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"lakehouse/broker"
	"lakehouse/internal/appliance"
)

func init() {
	register(&command{name: "topics", summary: "list broker topics, partitions and start/end offsets", run: runTopics})
}

func runTopics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("topics", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	orDemo(&c, fs, stderr)
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
		fmt.Fprintf(stdout, "no topics in %s\n", c.BrokerName())
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
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
