package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"lakehouse/broker"
)

func init() {
	register(&command{name: "topics", summary: "list broker topics, partitions and start/end offsets", run: runTopics})
}

func runTopics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("topics", stderr)
	var c common
	c.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	db, _, _, err := c.openReaders(ctx, "", true, false)
	if err != nil {
		return err
	}
	defer db.Close()
	topics, err := db.Topics(ctx)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		fmt.Fprintf(stdout, "no topics in %s\n", c.brokerName())
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "topic\tpartition\tstart\tend\tmessages\tbytes\t")
	// Messages are the records a partition holds: End-Start on the
	// embedded broker, counted on Kafka, whose offsets skip.
	for _, t := range topics {
		var all int64
		for _, p := range t.Partitions {
			n, err := broker.CountHeld(ctx, db, t.Name, p, p.Start, p.End)
			if err != nil {
				return err
			}
			all += n
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", t.Name, p.Partition, p.Start, p.End, n, p.Bytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t\t\t%d\t\t\n", t.Name, "all", all)
	}
	return tw.Flush()
}
