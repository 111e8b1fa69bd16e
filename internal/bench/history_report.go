package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lakehouse/internal/humanize"
)

// WriteHistoryReport writes <name>.json, <name>.md and <name>.svg of rep
// into dir, replacing earlier ones.
func WriteHistoryReport(dir, name string, rep HistoryReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".svg"), []byte(historySVG(rep)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(historyMarkdown(rep, name)), 0o644)
}

// ReadHistoryReport reads a <name>.json WriteHistoryReport wrote.
func ReadHistoryReport(dir, name string) (HistoryReport, error) {
	var rep HistoryReport
	js, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		return rep, fmt.Errorf("read %s.json: %w", name, err)
	}
	return rep, nil
}

func historyMarkdown(rep HistoryReport, name string) string {
	var b strings.Builder
	b.WriteString("# History: restart, checks and answers on a lake weeks old\n\n")
	fmt.Fprintf(&b, "Produced by `%s` on %s (%s), measuring %s. Each lake was built through the real pipeline by the binary's own demo at %s events a day (%s the real stream's 3 million), then the appliance was restarted on it as the service runs; the page cache was %s at the restart.\n\n",
		strings.TrimSpace(rep.Command), rep.When.Format("2006-01-02 15:04 MST"), rep.Machine, rep.Version,
		humanize.Count(int64(rep.EventsPerDay)), share(rep.EventsPerDay), map[bool]string{true: "cold (the lake's files evicted)", false: "warm"}[rep.Cold])

	b.WriteString("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range rep.Targets {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Target, t.Value, yesNo(t.Met, ""))
	}
	if len(rep.Failures) > 0 {
		b.WriteString("\n**The run failed:**\n\n")
		for _, f := range rep.Failures {
			fmt.Fprintf(&b, "- %s\n", mdCell(f))
		}
	}
	if len(rep.Missed) > 0 {
		b.WriteString("\n**Targets missed:**\n\n")
		for _, f := range rep.Missed {
			fmt.Fprintf(&b, "- %s\n", mdCell(f))
		}
	}

	b.WriteString("\n## Side by side\n\n|  |")
	for _, l := range rep.Lengths {
		fmt.Fprintf(&b, " %s |", daysLabel(l.Days))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rep.Lengths)) + "\n")
	row := func(label string, cell func(LengthResult) string) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, l := range rep.Lengths {
			fmt.Fprintf(&b, " %s |", mdCell(cell(l)))
		}
		b.WriteString("\n")
	}
	section := func(label string) { row("**"+label+"**", func(LengthResult) string { return "" }) }
	writeSideBySide(row, section)

	b.WriteString("\n## Growth from the shortest to the longest history\n\n")
	fmt.Fprintf(&b, "What a restart costs should not depend on how much history there is: each figure at the longest history within %gx its value at the shortest. verify and the questions read all of history by design and are not held to it; disk grows with history by nature.\n\n", TargetGrowth)
	b.WriteString("| figure | shortest | longest | ratio | within |\n|---|---|---|---|---|\n")
	for _, g := range rep.Growth {
		ratio := "not measured"
		if g.Ratio >= 0 {
			ratio = fmt.Sprintf("%.2fx", g.Ratio)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", g.Figure, figure(g.Shortest, g.Unit), figure(g.Longest, g.Unit), ratio, yesNo(g.Met, ""))
	}

	b.WriteString("\n## Details\n")
	for _, l := range rep.Lengths {
		writeDetails(&b, l)
	}
	writeMethod(&b, rep)
	fmt.Fprintf(&b, "\n![restart figures by history length](%s.svg)\n", name)
	return b.String()
}

// writeSideBySide writes the rows of the side-by-side table.
func writeSideBySide(row func(string, func(LengthResult) string), section func(string)) {
	row("stream events in the lake", func(l LengthResult) string {
		if l.Build.Events == 0 {
			return "?"
		}
		return humanize.Count(l.Build.Events)
	})
	section("build (the demo)")
	row("build time", func(l LengthResult) string { return secs(l.Build.Seconds) + reusedNote(l.Build) })
	row("demo peak RSS", func(l LengthResult) string { return mib(l.Build.PeakRSS) })
	row("checks the demo reported failed", func(l LengthResult) string { return listOrNone(checkNames(l.Build.CheckFailures)) })
	row("settling start after the demo", func(l LengthResult) string {
		if l.Build.Settle == nil {
			return "none"
		}
		return fmt.Sprintf("%s: %s", secs(l.Build.Settle.Seconds), listOrNone(l.Build.Settle.Jobs))
	})
	section("restart (`run --no-ingest`)")
	row("HTTP up", func(l LengthResult) string { return secs(l.Restart.HTTPSeconds) })
	row("first /readyz 200", func(l LengthResult) string { return when(l.Restart.ReadyzSeconds, l.Restart.WaitedSeconds) })
	row("ready with every check passing", func(l LengthResult) string { return when(l.Restart.ReadySeconds, l.Restart.WaitedSeconds) })
	row("VmHWM, start to ready", func(l LengthResult) string { return mib(l.Restart.HWMToReady) + notReady(l) })
	row("peak RssAnon, start to ready", func(l LengthResult) string { return mib(l.Restart.AnonToReady) + notReady(l) })
	row("peak RssFile, start to ready", func(l LengthResult) string { return mib(l.Restart.FileToReady) + notReady(l) })
	row("CPU, start to ready", func(l LengthResult) string { return secs(l.Restart.CPUToReady) + notReady(l) })
	row("first refresh", func(l LengthResult) string { return refreshCell(l.Restart.FirstRefresh) })
	row("checks of the first refresh", func(l LengthResult) string {
		if r := l.Restart.FirstRefresh; r != nil {
			return secs(r.ChecksSeconds)
		}
		return "none"
	})
	row("VmHWM at the end of the first refresh", func(l LengthResult) string {
		return mib(l.Restart.HWMFirstRefresh) + fmt.Sprintf(" (anon %s, file %s)", mib(l.Restart.AnonFirstRefresh), mib(l.Restart.FileFirstRefresh))
	})
	row("refreshes ended during the wait", func(l LengthResult) string { return fmt.Sprint(l.Restart.Refreshes) })
	section("steady state (`run` with events at the lake's density)")
	row("first refresh after that start", func(l LengthResult) string {
		if len(l.Steady.Refreshes) == 0 {
			return "none"
		}
		return refreshCell(&l.Steady.Refreshes[0])
	})
	row("steady-state refresh (median)", func(l LengthResult) string {
		if l.Steady.SteadySeconds < 0 {
			return "not measured" + errNote(l.Steady.Err)
		}
		return fmt.Sprintf("%s (%d refreshes)", secs(l.Steady.SteadySeconds), len(l.Steady.Refreshes)-1)
	})
	row("first refresh after the restart / steady", func(l LengthResult) string {
		if l.Restart.FirstRefresh == nil || l.Steady.SteadySeconds <= 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.2fx", l.Restart.FirstRefresh.Seconds/l.Steady.SteadySeconds)
	})
	row("VmHWM over the steady refreshes", func(l LengthResult) string { return mib(l.Steady.HWMSteady) })
	row("events fed / stored by ingest", func(l LengthResult) string {
		return fmt.Sprintf("%s / %s", humanize.Count(l.Steady.Sent), humanize.Count(l.Steady.Appended))
	})
	section("questions through `query`")
	for i := range maxAnswers() {
		row(fmt.Sprintf("question %d", i+1), func(l LengthResult) string {
			if i >= len(l.Answers) {
				return "not asked"
			}
			a := l.Answers[i]
			v := "exact"
			if !a.Exact {
				v = "**WRONG**"
			}
			return fmt.Sprintf("%s, %s, %s", v, secs(a.Query.Seconds), mib(a.Query.PeakRSS))
		})
	}
	section("verify")
	row("verify", func(l LengthResult) string {
		if len(l.Verify.Args) == 0 {
			return "not run"
		}
		ok := "passed"
		if l.Verify.ExitCode != 0 || l.Verify.Err != "" {
			ok = "**FAILED**"
		}
		return fmt.Sprintf("%s, %s, peak RSS %s", ok, secs(l.Verify.Seconds), mib(l.Verify.PeakRSS))
	})
	section("disk")
	row("total", func(l LengthResult) string { return diskBytes(l.Disk.Total) })
	row("per day of history", func(l LengthResult) string { return diskBytes(int64(l.Disk.PerDay)) })
	row("of which data files awaiting expiry", func(l LengthResult) string { return diskBytes(l.Disk.AwaitingExpiry) })
	for _, c := range []string{"broker.db", "catalog.db", "warehouse/bronze", "warehouse/silver", "warehouse/gold", "warehouse/ops", "checkpoints", "tmp", "other"} {
		row(c, func(l LengthResult) string { return diskBytes(l.Disk.Bytes(c)) })
	}
}

// maxAnswers is the number of questions (the same at every length).
func maxAnswers() int { return 4 }

func writeDetails(b *strings.Builder, l LengthResult) {
	fmt.Fprintf(b, "\n### %s\n\n", daysLabel(l.Days))
	if len(l.Build.Args) > 0 {
		fmt.Fprintf(b, "- built by `lakehouse %s`%s\n", strings.Join(l.Build.Args, " "), reusedNote(l.Build))
	} else if l.Build.Reused != "" {
		fmt.Fprintf(b, "- lake %s\n", l.Build.Reused)
	}
	for _, c := range l.Build.CheckFailures {
		fmt.Fprintf(b, "- the demo's summary: asset check FAIL %s\n", mdCell(c))
	}
	fmt.Fprintf(b, "- restart: `lakehouse %s`\n", strings.Join(l.Restart.Args, " "))
	if len(l.Restart.NotReady) > 0 {
		fmt.Fprintf(b, "- not ready after %.0f s; /readyz said:\n", l.Restart.WaitedSeconds)
		for _, r := range l.Restart.NotReady {
			fmt.Fprintf(b, "  - %s\n", mdCell(r))
		}
	}
	if r := l.Restart.FirstRefresh; r != nil {
		fmt.Fprintf(b, "- first refresh %s: started at %.1f s, %.1f s, rebuilt %s; checks (time since the refresh started at each one's end):\n", r.RunID, r.StartS, r.Seconds, mdCell(r.Scope))
		for _, c := range r.Checks {
			fmt.Fprintf(b, "  - %s %s at %.1f s: %s\n", passFail(c.Passed), c.Name, c.EndS, mdCell(c.Message))
		}
	}
	if len(l.Restart.Runs) > 0 {
		b.WriteString("- jobs ops.runs recorded during the restart (start since the process started, duration):\n")
		for _, r := range l.Restart.Runs {
			e := ""
			if r.Error != "" {
				e = ": " + mdCell(r.Error)
			}
			fmt.Fprintf(b, "  - %s at %.1f s, %.1f s, %s%s\n", r.Job, r.StartS, r.Seconds, r.Status, e)
		}
	}
	if len(l.Steady.Args) > 0 {
		fmt.Fprintf(b, "- steady phase: `lakehouse %s`, fed %.2f events/s; refreshes:", strings.Join(l.Steady.Args, " "), l.Steady.RatePerSecond)
		for i, r := range l.Steady.Refreshes {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(b, " %.1f s (%s, checks %s)", r.Seconds, mdCell(r.Scope), passFail(r.Passed))
		}
		b.WriteString("\n")
	}
	for i, a := range l.Answers {
		fmt.Fprintf(b, "- question %d, %s: `%s`: %s\n", i+1, mdCell(a.Question), mdCell(a.SQL), answerCell(a))
	}
	for _, e := range l.Errors {
		fmt.Fprintf(b, "- **error**: %s\n", mdCell(e))
	}
}

func writeMethod(b *strings.Builder, rep HistoryReport) {
	b.WriteString("\n## How it is measured\n\n")
	fmt.Fprintf(b, `- **Build.** `+"`lakehouse demo --events %d --loops N --span <days x 24h> --rate 0`"+`: the demo's replay through ingest, the broker, bronze, silver, sessions and the marts, event times spread over the span. A kept lake (`+"`--history-keep`"+`) is reused by later runs with the same parameters and measured on a copy, so every run restarts the lake as the demo left it.
- **Settling.** %s
- **Restart.** `+"`lakehouse run --data <lake> --no-ingest --http 127.0.0.1:0`"+` as a child process. Ready is /readyz answering 200 while the newest marts refresh (from /api/status) has every check passing; /readyz alone may answer 200 before any check ran (its first 200 is shown too). The appliance evaluates readiness every 5 s, so ready is seen up to 5 s after its cause. The wait is bounded (%.0f s); a lake that is not ready by then is reported with what /readyz says.
- **Memory.** /proc/<pid>/status of the child, sampled every 100 ms from its start: VmHWM is the kernel's peak RSS, file-backed pages (broker.db, catalog.db mapped by bbolt) included; RssAnon and RssFile are the largest sampled values. CPU is utime + stime from /proc/<pid>/stat.
- **First refresh and checks.** The process's first marts refresh as /api/status reports it: its duration (ops.runs records the same) and each check's end. The checks run after the marts are written; their time is from the newest gold snapshot committed before the first check ended to the last check's end.
- **Steady state.** The appliance started again on the same lake, with ingest, fed events stamped when sent at the lake's density (%s a day, %.2f events/s) by a replay server, with `+"`--refresh %.0fs`"+`. Its first refresh is the one after that start; the steady-state refresh is the median of the %d refreshes after it, each rebuilding what the events since the previous one changed (today's day). The target compares the first refresh after the restart with it.
- **Questions.** Asked through `+"`lakehouse query --format json`"+` (a child process, as a user would). The truth is read by the benchmark itself, not through the read path `+"`query`"+`, the marts and the checks share: the live data files listed by the current snapshot's manifests, each once, read with arrow-go's Parquet reader, each file's rows equal to its manifest entry's count; bronze's offsets also against the broker's (opened read-only). "The last day" is the 24 h before the newest event time in silver.edits; the editor is the one with the most sessions. An answer that differs is WRONG and fails the run.
- **verify.** `+"`lakehouse verify --data <lake>`"+`: its wall time and the kernel's peak RSS of the child (maxrss).
- **Disk.** Allocated blocks of each component of the built lake, before the restart.%s
`, rep.Recording, settleNote(rep.Settled), rep.ReadyTimeoutS, humanize.Count(int64(rep.EventsPerDay)), float64(rep.EventsPerDay)/86400, rep.RefreshS, rep.SteadyRefreshes, diskMethod(rep))
}

// diskMethod says how the disk projection is made, when there is one.
func diskMethod(rep HistoryReport) string {
	p := rep.Disk
	if p == nil {
		return ""
	}
	return fmt.Sprintf("\n- **Disk projection.** From the %g-day lake, scaled by %.0f to the real stream's %s events a day: broker.db grows %s a day until retention caps it at %s (the smaller of `--retention` %s and `--retention-bytes`' default, %.0f %% of the file system); the rest (warehouse, checkpoints, catalog) grows %s a day for good (no table retention by default), leaving out the data files awaiting expiry (files compaction replaced, which a service's next expiry deletes within seconds, but which a lake built in minutes still holds). The days are those until free space on a %.0f GB file system falls to `--disk-reserve` (%s), with the operating system's own files left out.",
		p.FromDays, p.Scale, humanize.Count(int64(p.Plan.RealPerDay)), fmtBytes(int64(p.BrokerPerDay)), fmtBytes(int64(p.BrokerCap)), p.Plan.BrokerAge, p.Plan.BrokerShare*100,
		fmtBytes(int64(p.OtherPerDay)), float64(p.Plan.FSBytes)/1e9, fmtBytes(p.Plan.Reserve))
}

func settleNote(settled bool) string {
	const why = "The demo gathers the history in minutes and stops before the compaction a service runs every two minutes has caught up; the first start after it compacts every table before its first refresh. "
	if settled {
		return why + "Each build therefore ends with one start of the appliance without ingest (`run --no-ingest`, refreshing every 20 s) until it has compacted and refreshed twice, and the restart measured is the next one, as on a service that has been running."
	}
	return why + "These lakes were measured as the demo left it (`--history-settle=false`, or a lake given with `--history-lake`): the restart includes that compaction."
}

// share says what part of the real stream's density perDay is.
func share(perDay int) string {
	return fmt.Sprintf("%.3g times", float64(perDay)/RealEventsPerDay)
}

func daysLabel(d float64) string {
	if d == 1 {
		return "1 day"
	}
	return fmt.Sprintf("%g days", d)
}

func secs(s float64) string {
	if s < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f s", s)
}

func mib(b int64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// diskBytes renders a component's size ("none" when absent).
func diskBytes(n int64) string {
	if n <= 0 {
		return "none"
	}
	return humanize.Bytes(n)
}

func figure(v float64, unit string) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// when renders a time that may not have come within the wait.
func when(s, waited float64) string {
	if s < 0 {
		return fmt.Sprintf("**not within %.0f s**", waited)
	}
	return secs(s)
}

func notReady(l LengthResult) string {
	if l.Restart.ReadySeconds < 0 && l.Restart.WaitedSeconds > 0 {
		return fmt.Sprintf(" (to %.0f s, never ready)", l.Restart.WaitedSeconds)
	}
	return ""
}

func refreshCell(r *RefreshRun) string {
	if r == nil {
		return "none ended"
	}
	pass := 0
	for _, c := range r.Checks {
		if c.Passed {
			pass++
		}
	}
	return fmt.Sprintf("%s, checks %d/%d passed", secs(r.Seconds), pass, len(r.Checks))
}

func reusedNote(r BuildRecord) string {
	if r.Reused == "" {
		return ""
	}
	return " (" + r.Reused + ")"
}

func errNote(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func checkNames(fails []string) []string {
	var out []string
	for _, f := range fails {
		name, _, _ := strings.Cut(f, " ")
		out = append(out, name)
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func answerCell(a Answer) string {
	if a.Exact {
		return "exact: " + strings.Join(a.Got, "; ")
	}
	s := fmt.Sprintf("**WRONG**: got %s; want %s", orNothing(a.Got), orNothing(a.Want))
	if a.Err != "" {
		s += "; " + a.Err
	}
	return s
}

func orNothing(rows []string) string {
	if len(rows) == 0 {
		return "no rows"
	}
	return strings.Join(rows, "; ")
}

// mdCell keeps text inside one markdown table cell or list item.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
