package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"lakehouse/internal/appliance"
	"lakehouse/verify"
)

func init() {
	register(&command{name: "verify", summary: "check every page of broker.db and catalog.db, every layer against the broker and silver against bronze (exit 1 on any failed check; what the pipeline has not read yet is pending, not failed)", run: runVerify})
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	warehouse := fs.String("warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage (default <data>/warehouse)")
	countsOnly := fs.Bool("counts-only", false, "print the observed counts as one JSON line")
	exp := verify.NoExpectations()
	fs.Int64Var(&exp.Messages, "expect-messages", -1, "messages the recentchange topic must hold (-1: unchecked)")
	fs.Int64Var(&exp.Silver, "expect-silver", -1, "rows silver.edits must hold, all distinct (-1: unchecked)")
	fs.Int64Var(&exp.DLQ, "expect-dlq", -1, "messages the dead-letter topic must hold (-1: unchecked)")
	registerEventTime(fs, &exp.WatermarkDelay, &exp.MaxEventAhead)
	drained := fs.Bool("expect-drained", false, "fail on anything pending (broker messages bronze has not read, bronze rows silver has not read): for a pipeline stopped after draining")
	lateFile := fs.String("late-ids", "", "file of event ids (one per line) that were published late and must not be in silver")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	orDemo(&c, fs, stderr)
	var fe appliance.Problems
	fe.EventTime(exp.WatermarkDelay, exp.MaxEventAhead)
	if err := refused(fe); err != nil {
		return err
	}
	exp.AllowPending = !*drained
	if *lateFile != "" {
		ids, err := readLines(*lateFile)
		if err != nil {
			return err
		}
		exp.LateIDs = ids
	}
	v, err := c.Verify(ctx, *warehouse, exp, display(stderr)) // stderr: --counts-only keeps stdout one JSON line
	if err != nil && !errors.Is(err, verify.ErrFailed) {
		return err
	}
	r := v.Report
	if *countsOnly {
		fmt.Fprintln(stdout, r.CountsJSON())
	} else {
		filesMark := "ok  "
		if v.FilesSkipped {
			filesMark = "skip"
		}
		fmt.Fprintf(stdout, "%s %-20s %s\n", filesMark, "bolt-files", v.Files)
		for _, ch := range r.Checks {
			mark := "ok  "
			if !ch.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(stdout, "%s %-20s %s\n", mark, ch.Name, ch.Detail)
		}
	}
	return err
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}
