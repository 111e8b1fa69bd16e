package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
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
	db, err := c.openBrokerExisting(ctx, true)
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
	for _, t := range topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", t.Name, p.Partition, p.Start, p.End, p.End-p.Start, p.Bytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t\t\t%d\t\t\n", t.Name, "all", t.Messages())
	}
	return tw.Flush()
}
