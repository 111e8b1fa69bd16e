package bench

import (
	"fmt"
	"strings"
	"time"

	"lakehouse/internal/humanize"
	"lakehouse/table"
)

// soakMarkdown renders a soak report as benchmarks/<name>.md: how it ran,
// the summary, the tables and batches, the chart and about twenty samples.
func soakMarkdown(name string, rep SoakReport) string {
	res, s := rep.SoakResult, rep.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak: the appliance for %s\n\n", time.Duration(s.DurationSeconds*float64(time.Second)).Round(time.Second))
	fmt.Fprintf(&b, "Produced by `%s` on %s (%s).\n\n", strings.TrimSpace(rep.Command), rep.When.Format("2006-01-02 15:04 MST"), rep.Machine)
	soakMethod(&b, res, rep.Config)
	soakSummaryTable(&b, s)
	soakObjectStore(&b, s)
	soakTablesAndBatches(&b, s)
	fmt.Fprintf(&b, "\n![RSS, anonymous RSS and CPU over time](%s.svg)\n", name)
	soakSampleTable(&b, res.Samples)
	return b.String()
}

// soakMethod says how the soak ran: the child, the replay, the samples.
func soakMethod(b *strings.Builder, res SoakResult, cfg SoakConfig) {
	if res.Err != "" {
		fmt.Fprintf(b, "**The soak did not complete: %s**\n\n", res.Err)
	}
	padded := ""
	if cfg.EventBytes > 0 {
		padded = fmt.Sprintf(", each padded (in its comment) to %s bytes", humanize.Count(int64(cfg.EventBytes)))
	}
	args, s3Status := "", ""
	s3Note := ", and the warehouse's metadata files (the newest metadata.json that parses; catalog.db and broker.db stay closed while the child runs). " +
		"Freshness is, for each silver.edits row of an append snapshot seen for the first time, the snapshot's timestamp minus the row's `intake_time`. "
	if cfg.S3 {
		args = " --warehouse " + soakWarehouse
		s3Status = ", the object-store requests it counted"
		s3Note = ". The warehouse was on S3: gofakes3 (in memory) served by the parent on 127.0.0.1, as `prove --warehouse s3` does; its metadata files are not on local disk, so tables were not sampled, and freshness is, for every silver.edits row, read after the soak, its `processed_time` (when silver's batch ran; its commit ends the batch) minus its `intake_time`. "
	}
	if len(cfg.ExtraArgs) > 0 {
		args += " " + strings.Join(cfg.ExtraArgs, " ")
	}
	fmt.Fprintf(b, "The appliance ran as a child process exactly as `run` does (`run --data <fresh dir> --source <replay> --http 127.0.0.1:0%s`, every other setting its default: "+
		"all queries, marts refresh, maintenance, retention). A replay server in the parent fed it a live-like stream: the type mix of %s generated events looped with fresh `meta.id`s on every pass, "+
		"`meta.dt` stamped when sent%s, %g ev/s with bursts to %g ev/s for %s at the end of every %s, a canary every %s and a contract violation every %s. "+
		"Every %s the parent sampled the child from outside: `/proc/<pid>/status` (VmRSS, RssAnon), `/proc/<pid>/stat` (utime + stime: CPU %% of one core), `/proc/<pid>/io` (write_bytes - cancelled_write_bytes), "+
		"its `/status` (Go heap, goroutines, broker counts%s)%s"+
		"After the last event the parent waited for the broker and every query to hold everything, stopped the child with SIGTERM and ran the verifier.\n\n",
		args, humanize.Count(int64(cfg.Recording)), padded, cfg.Rate, cfg.Burst, cfg.BurstLength, cfg.BurstEvery, cfg.CanaryEvery, cfg.ViolationEvery, cfg.Sample,
		s3Status, s3Note)
}

// soakSummaryTable writes the Summary section.
func soakSummaryTable(b *strings.Builder, s SoakSummary) {
	b.WriteString("## Summary\n\n| what | value |\n|---|---|\n")
	row := func(k, format string, a ...any) { fmt.Fprintf(b, "| %s | %s |\n", k, fmt.Sprintf(format, a...)) }
	row("duration (feeding), drain after it", "%s, %.1f s", time.Duration(s.DurationSeconds*float64(time.Second)).Round(time.Second), s.DrainSeconds)
	row("events sent (stream / violations / canaries)", "%s (%s / %d / %d)", humanize.Count(s.Events), humanize.Count(s.StreamEvents), s.Violations, s.Canaries)
	row("mean rate, peak rate (1 s)", "%.1f ev/s, %.0f ev/s", s.MeanRate, s.PeakRate)
	row("peak RSS after warm-up ("+time.Duration(s.WarmupSeconds*float64(time.Second)).String()+")", "%.0f MiB (anon %.0f MiB)", s.PeakRSSMiB, s.PeakAnonMiB)
	if s.PeakHWMMiB > 0 {
		row("peak RSS of the whole run (VmHWM)", "%.0f MiB", s.PeakHWMMiB)
	}
	row("RSS slope, second half", "%+.1f MiB/h (anon %+.1f MiB/h)", s.RSSSlopeMiBPerHour, s.AnonSlopeMiBPerHour)
	row("Go heap slope, second half", "in use %+.1f MiB/h, live after GC %+.1f MiB/h", s.HeapSlopeMiBPerHour, s.LiveSlopeMiBPerHour)
	if s.HeldSlopeMiBPerHour != 0 || s.OutsideGoSlopeMiBPerHour != 0 {
		row("anonymous RSS slope by owner, second half", "held by Go %+.1f MiB/h, outside Go (DuckDB, libc) %+.1f MiB/h", s.HeldSlopeMiBPerHour, s.OutsideGoSlopeMiBPerHour)
	}
	row("goroutines (end / max)", "%d / %d", s.EndGoroutines, s.MaxGoroutines)
	row("mean CPU, one core = 100 %", "%.1f %% (the harness itself: %.1f %%)", s.MeanCPUPercent, s.HarnessCPUPercent)
	row("freshness p50 / p95 / p99 / max", "%.2f / %.2f / %.2f / %.2f s (%s rows)", s.FreshP50, s.FreshP95, s.FreshP99, s.FreshMax, humanize.Count(s.FreshRows))
	if s.ObjectStore != nil {
		row("object-store requests (S3), after the warm-up", "%.3f per event; %s per day, %.2f USD per day at list prices", s.RequestsPerEvent,
			humanize.Count(int64(s.RequestsPerDay)), s.RequestUSDPerDay)
	}
	row("largest metadata.json", "%s (%s)", bytesText(s.LargestMetadataBytes), s.LargestMetadataTable)
	row("snapshots missed by sampling", "%d", s.MissedSnapshots)
	row("bytes written per event", "%s (%s in all while feeding)", bytesText(int64(s.WriteBytesPerEvent)), bytesText(s.WriteBytes))
	row("projected written per day (second half's rate)", "%.2f GB", s.WriteGBPerDay)
	row("data directory at the end, projected growth", "%s, %+.2f GB/day", bytesText(s.DataDirBytes), s.DiskGBPerDay)
	if s.Verified {
		row("every event in silver", "%s: silver %s of %s, broker %s of %s, DLQ %s of %s", yes(s.EverythingInSilver),
			humanize.Count(s.Silver), humanize.Count(s.ExpectedSilver), humanize.Count(s.Broker), humanize.Count(s.ExpectedBroker),
			humanize.Count(s.DLQ), humanize.Count(s.ExpectedDLQ))
		checks := "all passed"
		if len(s.FailedChecks) > 0 {
			checks = "FAILED: " + strings.Join(s.FailedChecks, ", ")
		}
		row("verifier checks", "%s", checks)
	} else {
		row("every event in silver", "not verified")
	}
	if s.SampleErrors > 0 {
		row("failed reads within samples", "%d (see the JSON)", s.SampleErrors)
	}

}

// soakTablesAndBatches writes the per-table and per-query sections.
func soakTablesAndBatches(b *strings.Builder, s SoakSummary) {
	if len(s.Tables) > 0 { // an S3 soak samples none
		soakTables(b, s)
	}
	if len(s.Queries) > 0 {
		b.WriteString("\n## Batches\n\nEach query's mean batch duration (read to commit entry) and table-commit duration, first half of the feeding against the second: a cost per batch that grew with the batches so far would show here.\n\n")
		b.WriteString("| query | batches, 1st / 2nd half | batch ms, 1st / 2nd | commit ms, 1st / 2nd |\n|---|---|---|---|\n")
		for _, q := range s.Queries {
			fmt.Fprintf(b, "| %s | %d / %d | %.1f / %.1f | %.1f / %.1f |\n", q.Query, q.FirstBatches, q.SecondBatches,
				q.FirstBatchMean, q.SecondBatchMean, q.FirstCommitMean, q.SecondCommitMean)
		}
	}
}

// soakSampleTable writes about twenty evenly spaced samples.
func soakSampleTable(b *strings.Builder, samples []SoakSample) {
	b.WriteString("\n## Samples\n\nAbout twenty of them, evenly spaced; the JSON holds the summary, not the samples.\n\n")
	b.WriteString("| elapsed | sent | ev/s | RSS MiB | anon MiB | heap MiB | live MiB | Go held MiB | CPU % | bronze snapshots | silver snapshots | bronze metadata.json | data dir | fresh p95 s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	step := max(1, len(samples)/20)
	for i, smp := range samples {
		if i%step != 0 && i != len(samples)-1 {
			continue
		}
		fp := "-"
		if smp.FreshRows > 0 {
			fp = fmt.Sprintf("%.2f", smp.FreshP95)
		}
		br, sv := smp.Tables["bronze.recentchange"], smp.Tables["silver.edits"]
		fmt.Fprintf(b, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %d | %s | %s | %s |\n",
			time.Duration(smp.Elapsed*float64(time.Second)).Round(time.Second), humanize.Count(smp.Sent), smp.Rate,
			float64(smp.RSSBytes)/bytesPerMiB, float64(smp.AnonBytes)/bytesPerMiB, float64(smp.Runtime.HeapInUseBytes)/bytesPerMiB, float64(smp.Runtime.LiveHeapBytes)/bytesPerMiB,
			float64(smp.Runtime.HeldBytes)/bytesPerMiB, smp.CPUPercent, br.Snapshots, sv.Snapshots, bytesText(br.MetadataBytes), bytesText(smp.DataDirBytes), fp)
	}
}

// soakObjectStore writes the object-store section of an S3 soak: the
// requests by kind over the steady window, per event, per day at the
// soak's rate and in USD at S3 Standard's list prices.
func soakObjectStore(b *strings.Builder, s SoakSummary) {
	r := s.ObjectStore
	if r == nil {
		return
	}
	fmt.Fprintf(b, "\n## Object-store requests\n\nThe requests the appliance sent to its S3 warehouse, as it counts them (every HTTP request of its S3 client, retries included; the marts' DuckDB reads local copies the appliance downloads, so those downloads are counted; "+
		"the soak's own `/status` samples cause a few, as silver's lag reads bronze's metadata), from %s to %s of the feeding (after the warm-up: %s, %s events, %.1f ev/s). "+
		"Per day is this window's rate times a day: the soak's stream has the real one's rate and bursts. "+
		"USD at S3 Standard's list prices (us-east-1, %s): PUT, COPY, POST and LIST %g USD per 1,000 requests, GET, HEAD and the rest %g per 1,000, DELETE free.\n\n",
		roundSecs(s.DurationSeconds-s.ObjectStoreSeconds), roundSecs(s.DurationSeconds), roundSecs(s.ObjectStoreSeconds), humanize.Count(s.ObjectStoreEvents),
		float64(s.ObjectStoreEvents)/s.ObjectStoreSeconds, table.S3PricesAsOf, table.S3PutPostListPer1000, table.S3GetHeadPer1000)
	b.WriteString("| kind | requests | per event | per day | USD per day |\n|---|---|---|---|---|\n")
	perDay := 86400 / s.ObjectStoreSeconds
	row := func(kind string, n int64, usd float64) {
		per := 0.0
		if s.ObjectStoreEvents > 0 {
			per = float64(n) / float64(s.ObjectStoreEvents)
		}
		fmt.Fprintf(b, "| %s | %s | %.3f | %s | %.3f |\n", kind, humanize.Count(n), per, humanize.Count(int64(float64(n)*perDay)), usd*perDay)
	}
	hi, lo := table.S3PutPostListPer1000/1000, table.S3GetHeadPer1000/1000
	row("PUT", r.Put, float64(r.Put)*hi)
	row("POST", r.Post, float64(r.Post)*hi)
	row("LIST", r.List, float64(r.List)*hi)
	row("GET", r.Get, float64(r.Get)*lo)
	row("HEAD", r.Head, float64(r.Head)*lo)
	if r.Other > 0 {
		row("other", r.Other, float64(r.Other)*lo)
	}
	row("DELETE", r.Delete, 0)
	row("**all**", r.Total(), r.USD())
}

// secs renders seconds as a rounded duration.
func roundSecs(v float64) time.Duration {
	return time.Duration(v * float64(time.Second)).Round(time.Second)
}

// soakTables writes the per-table section.
func soakTables(b *strings.Builder, s SoakSummary) {
	b.WriteString("\n## Tables\n\nSnapshots in the current metadata and live data files (the current snapshot's `total-data-files`), the most seen in any sample and at the end; metadata.json sizes; snapshots committed and expired between two samples (never seen).\n\n")
	b.WriteString("| table | snapshots max / end | live data files max / end | metadata.json end / largest | missed |\n|---|---|---|---|---|\n")
	for _, t := range s.Tables {
		fmt.Fprintf(b, "| %s | %d / %d | %d / %d | %s / %s | %d |\n", t.Table, t.MaxSnapshots, t.EndSnapshots, t.MaxDataFiles, t.EndDataFiles,
			bytesText(t.EndMetadataBytes), bytesText(t.LargestMetadataBytes), t.Missed)
	}
}
