package main

import (
	"context"
	"io"

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
	return c.Topics(ctx, stdout)
}
