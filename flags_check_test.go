package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/internal/demo"
	"lakehouse/internal/fault"
)

// TestBadFlagsRefusedBeforeDataDir: every setting that can never work (or
// that used to be silently replaced by a default) is refused with exit
// status 2 and an error naming the flag, before the data directory is
// created.
func TestBadFlagsRefusedBeforeDataDir(t *testing.T) {
	cases := []struct {
		cmd  string
		args []string
		flag string // named in the error
	}{
		{"run", []string{"--partitions", "20000"}, "--partitions"},
		{"run", []string{"--partitions", "0"}, "--partitions"},
		{"run", []string{"--trigger", "0"}, "--trigger"},
		{"run", []string{"--trigger", "-1s"}, "--trigger"},
		{"run", []string{"--watermark", "0"}, "--watermark"},
		{"run", []string{"--max-event-ahead", "0"}, "--max-event-ahead"},
		{"run", []string{"--session-gap", "0"}, "--session-gap"},
		{"run", []string{"--session-max", "5m"}, "--session-max"}, // not above the 10m watermark
		{"run", []string{"--max-offsets-per-trigger", "0"}, "--max-offsets-per-trigger"},
		{"run", []string{"--max-bytes-per-trigger", "0"}, "--max-bytes-per-trigger"},
		{"run", []string{"--downstream-trigger", "-1s"}, "--downstream-trigger"},
		{"run", []string{"--refresh", "-1m"}, "--refresh"},
		{"run", []string{"--retention", "-1h"}, "--retention"},
		{"run", []string{"--disk-reserve", "-1"}, "--disk-reserve"},
		{"run", []string{"--retention-bytes", "-2"}, "--retention-bytes"},
		{"run", []string{"--ops-retention", "-1h"}, "--ops-retention"},
		{"run", []string{"--max-snapshots", "0"}, "--max-snapshots"},
		{"run", []string{"--http-max-conns", "-1"}, "--http-max-conns"},
		{"run", []string{"--keep-snapshots", "30"}, "--keep-snapshots"}, // above --max-snapshots 25
		{"run", []string{"--marts-memory", "lots"}, "--marts-memory"},
		{"run", []string{"--source", ""}, "--source"},
		{"run", []string{"--source", "not-a-url"}, "--source"},
		{"run", []string{"--source", "ftp://example.org/stream"}, "--source"},
		{"run", []string{"--source", "http://"}, "--source"},
		{"run", []string{"--since", "yesterday"}, "--since"},
		{"run", []string{"--checkpoint-loss", "maybe"}, "--checkpoint-loss"},
		{"run", []string{"--broker", "http://127.0.0.1:9092"}, "--broker"},
		{"run", []string{"--broker", "kafka://"}, "--broker"},
		{"run", []string{"--role", "everything"}, "--role"},
		{"run", []string{"--role", "ingest"}, "--role"},                                                       // on broker.db
		{"run", []string{"--role", "stream", "--broker", "kafka://127.0.0.1:9092"}, "--role"},                 // no REST catalog
		{"run", []string{"--role", "marts", "--broker", "kafka://127.0.0.1:9092", "--catalog", ""}, "--role"}, // no REST catalog
		{"prove", []string{"--broker", "rabbit"}, "--broker"},
		{"prove", []string{"--warehouse", "gcs"}, "--warehouse"},
		{"demo", []string{"--events", "-5"}, "--events"},
		{"demo", []string{"--events", "0"}, "--events"},
		{"demo", []string{"--loops", "0"}, "--loops"},
		{"demo", []string{"--rate", "-1"}, "--rate"},
		{"demo", []string{"--timeout", "0"}, "--timeout"},
		{"demo", []string{"--partitions", "0"}, "--partitions"},
		{"verify", []string{"--watermark", "0"}, "--watermark"},
	}
	for _, c := range cases {
		t.Run(c.cmd+" "+strings.Join(c.args, " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			var stdout, stderr bytes.Buffer
			code := run(append([]string{c.cmd, "--data", dir}, c.args...), &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (stderr: %s)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.flag) {
				t.Errorf("the error does not name %s: %q", c.flag, stderr.String())
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data directory exists after the refusal (stat: %v)", err)
			}
		})
	}
}

// TestDefaultFlagsPass: the defaults of run and demo pass the checks (the
// refusals above are of the values, not of every setting).
func TestDefaultFlagsPass(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f pipelineFlags
	f.register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := refused(f.Check(true)); err != nil {
		t.Errorf("run's defaults refused: %v", err)
	}
	for _, ok := range [][]string{
		{"--session-max", "off"}, {"--max-bytes-per-trigger", "-1"}, {"--refresh", "0"}, {"--retention", "0"}, {"--disk-reserve", "0"}, {"--ops-retention", "0"},
		{"--downstream-trigger", "0"}, {"--no-ingest", "--source", ""}, {"--partitions", "256"},
	} {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		var f pipelineFlags
		f.register(fs)
		if err := fs.Parse(ok); err != nil {
			t.Fatal(err)
		}
		if err := refused(f.Check(true)); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
	o := demo.Options{Config: f.Config, Events: 2000, Loops: 2, Rate: 5000, Span: demo.DefaultSpan, Timeout: 5 * time.Minute}
	if err := refused(o.Problems()); err != nil {
		t.Errorf("demo's defaults refused: %v", err)
	}
}

// TestDemoHelpShowsDemoDefaults: `help demo` shows the defaults the demo
// runs with, not run's.
func TestDemoHelpShowsDemoDefaults(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"help", "demo"}, &out, io.Discard); code != 0 {
		t.Fatalf("help demo: exit status %d", code)
	}
	for _, want := range []string{`(default "` + demo.DefaultDir + `")`, "(default 500ms)", `(default "127.0.0.1:0")`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help demo does not show %s", want)
		}
	}
}

// TestCrashHookEnvChecked: LAKEHOUSE_CRASH_AT must name a registered hook
// and a count (a mistyped hook would run a kill test that never kills), and
// an armed hook is announced on stderr.
func TestCrashHookEnvChecked(t *testing.T) {
	defer fault.Disarm()
	dir := filepath.Join(t.TempDir(), "none")
	for _, c := range []struct {
		env, want string
		code      int
	}{
		{"no.such-hook", `no crash hook is named "no.such-hook"`, 2},
		{"broker.in-commit:x", "must be a count", 2},
		{"broker.in-commit:-1", "must be a count", 2},
		{"broker.in-commit:1000000", "will SIGKILL itself at hook broker.in-commit (after 1000000 hits)", 1}, // then: no broker here
	} {
		t.Setenv(envCrashAt, c.env)
		var stderr bytes.Buffer
		if code := run([]string{"topics", "--data", dir}, io.Discard, &stderr); code != c.code {
			t.Errorf("%s=%s: exit status %d, want %d (%s)", envCrashAt, c.env, code, c.code, stderr.String())
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s=%s: stderr %q does not say %q", envCrashAt, c.env, stderr.String(), c.want)
		}
		fault.Disarm()
	}
}

// TestStartupErrorsSayEachStepOnce: a start-up error names its step once
// (it read "open lake: open lake: warehouse ..." and "create topic: create
// topic ...").
func TestStartupErrorsSayEachStepOnce(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	if code := run([]string{"run", "--data", dir, "--no-ingest", "--http", "off", "--warehouse", "relative/path"}, io.Discard, &stderr); code != 1 {
		t.Fatalf("exit status %d, want 1 (%s)", code, stderr.String())
	}
	if got := strings.Count(stderr.String(), "open lake:"); got != 1 {
		t.Errorf("%q says \"open lake:\" %d times, want once", stderr.String(), got)
	}
	// A topic made with 4 partitions, asked for with 8.
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTopic(context.Background(), ingest.DefaultTopic, 4); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"run", "--data", dir, "--no-ingest", "--http", "off", "--partitions", "8"}, io.Discard, &stderr); code != 1 {
		t.Fatalf("exit status %d, want 1 (%s)", code, stderr.String())
	}
	if got := strings.Count(stderr.String(), "create topic"); got != 1 {
		t.Errorf("%q says \"create topic\" %d times, want once", stderr.String(), got)
	}
}

// TestBenchRefusals: bench refuses settings no run could use before it
// starts anything, with exit status 2 and the flag named.
func TestBenchRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--rates", "100,fast"}, "--rates"},
		{[]string{"--rates", "0"}, "--rates"},
		{[]string{"--triggers", "1s,soon"}, "--triggers"},
		{[]string{"--phase", "0s"}, "--phase"},
		{[]string{"--history", "--history-days", "1,-7"}, "--history-days"},
		{[]string{"--history", "--history-cache", "hot"}, "--history-cache"},
		{[]string{"--history", "--history-steady", "-1"}, "--history-steady"},
		{[]string{"--history", "--history-refresh", "0s"}, "--history-refresh"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			out := t.TempDir()
			code := run(append([]string{"bench", "--out", out}, c.args...), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.flag) {
				t.Errorf("exit status %d, stderr %q: want 2 naming %s", code, stderr.String(), c.flag)
			}
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Errorf("bench wrote %d files into --out after refusing", len(ents))
			}
		})
	}
}
