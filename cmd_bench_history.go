package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"lakehouse/internal/bench"
)

// historyFlags are bench --history's settings.
type historyFlags struct {
	on bool
	bench.HistoryCommand
}

func (h *historyFlags) register(fs *flag.FlagSet) {
	h.Lakes = map[float64]string{}
	fs.BoolVar(&h.on, "history", false, "run the history benchmark instead of the phases: for each --history-days, a lake built by this binary's demo, the appliance restarted on it (`run --no-ingest`, a child process measured from outside), questions through `query` checked against an independent reading, verify, disk by component and a steady-state refresh; writes <out>/<history-name>.md, .json and .svg")
	fs.StringVar(&h.Days, "history-days", "1,7,28", "history: lengths of history to measure, in days (fractions allowed)")
	fs.IntVar(&h.EventsPerDay, "history-events-per-day", bench.DefaultHistoryEventsPerDay, "history: density of the history (the real stream is about 3,000,000 a day)")
	fs.IntVar(&h.Recording, "history-recording", bench.DefaultHistoryRecording, "history: events in the demo's recording (its --events; --loops makes up the rest)")
	fs.StringVar(&h.Keep, "history-keep", "", "history: keep the built lakes (and the children's logs) in this directory and reuse those built with the same parameters on later runs; every measurement then runs on a copy (default: a temporary directory, removed after a run that passed)")
	fs.Func("history-lake", "history: DAYS=DIR measures the existing lake DIR (read only, on a copy) as the length DAYS instead of building one; repeatable", func(v string) error {
		d, dir, ok := strings.Cut(v, "=")
		days, err := strconv.ParseFloat(d, 64)
		if !ok || err != nil || days <= 0 || dir == "" {
			return fmt.Errorf("want DAYS=DIR, got %q", v)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		h.Lakes[days] = abs
		return nil
	})
	fs.BoolVar(&h.Rebuild, "history-rebuild", false, "history: build every lake again even when --history-keep holds one with the same parameters")
	fs.BoolVar(&h.Settle, "history-settle", true, "history: end each build with one start of the appliance (no ingest) that lets its compaction catch up, so the restart measured is that of a service that has been running rather than the first after the demo (false: measure the lake as the demo left it)")
	fs.StringVar(&h.Cache, "history-cache", "cold", "history: the page cache at the restart: cold (the lake's files evicted first, as after a reboot) or warm (as the build or copy left them)")
	fs.DurationVar(&h.ReadyTimeout, "history-ready-timeout", bench.DefaultHistoryReadyTimeout, "history: give up waiting for ready with every check passing (and for the steady phase's first refresh) after this long")
	fs.DurationVar(&h.Refresh, "history-refresh", bench.DefaultHistoryRefresh, "history: the steady phase's --refresh")
	fs.IntVar(&h.Steady, "history-steady", bench.DefaultHistorySteady, "history: steady-state refreshes measured after the steady phase's first (0: no steady phase)")
	fs.StringVar(&h.Name, "history-name", "history", "history: base name of the report files in --out")
}
