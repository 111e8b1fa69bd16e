package main

import (
	"context"
	"fmt"
	"io"
)

func init() {
	register(&command{name: "run", summary: "run the appliance on the live stream (the default command)", run: runRun})
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	var f pipelineFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(true); err != nil {
		return err
	}
	if err := f.checkHTTP(); err != nil {
		return err
	}
	killAt, err := killAtFromEnv()
	if err != nil {
		return err
	}
	f.killAtBronze = killAt
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	p, err := openPipeline(ctx, f, log)
	if err != nil {
		return err
	}
	defer p.Close()
	log.Info("lakehouse running", "data", f.data, "source", f.source, "warehouse", p.lake.Warehouse())
	if err := p.run(ctx, stderr); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "lakehouse: stopped cleanly")
	return nil
}
