package dashboard

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"lakehouse/internal/diskbudget"
	"lakehouse/internal/humanize"
	"lakehouse/internal/observe"
	"lakehouse/marts"
)

// WriteText renders an observation for a terminal: what the page shows,
// as `lakehouse status` prints it.
func WriteText(w io.Writer, o observe.Observation) {
	state := "READY"
	if !o.Health.Ready {
		state = "NOT READY"
	}
	fmt.Fprintf(w, "lakehouse %s, up %s: %s\n", o.Version, o.At.Sub(o.Started).Round(time.Second), state)
	for _, r := range o.Health.Reasons {
		fmt.Fprintf(w, "  ! %s\n", r)
	}
	for _, r := range o.Health.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", r)
	}
	h := o.Hops
	fmt.Fprintf(w, "\npipeline: source %s -> broker %s (dead-letter %s) -> bronze %s -> silver %s -> sessions %s -> gold %s rows\n",
		humanize.Count(h.SourceSeen), humanize.Count(h.Broker), humanize.Count(h.DLQ), humanize.Count(h.Bronze),
		humanize.Count(h.Silver), humanize.Count(h.Sessions), humanize.Count(h.Gold))
	if in := o.Ingest; in != nil {
		conn := "connected"
		if !in.Connected {
			conn = "NOT connected"
		}
		fmt.Fprintf(w, "ingest: %s, %.1f events/s over the last minute, %d reconnects\n", conn, in.RatePerSecond, in.Reconnects)
		if in.Oversized > 0 || in.BadIDs > 0 {
			fmt.Fprintf(w, "  %d SSE frames too large to read (to the DLQ), %d SSE ids refused as a position\n", in.Oversized, in.BadIDs)
		}
		if in.LastError != "" && !in.Connected {
			fmt.Fprintf(w, "  last error: %s\n", in.LastError)
		}
	}
	if d := o.Disk; d != nil {
		writeDisk(w, *d)
	}
	if r := o.ObjectStore; r != nil {
		fmt.Fprintf(w, "object store: %s requests since start (PUT %s, POST %s, LIST %s, GET %s, HEAD %s, DELETE %s), %.3f USD at S3 Standard list prices\n",
			humanize.Count(r.Total()), humanize.Count(r.Put), humanize.Count(r.Post), humanize.Count(r.List), humanize.Count(r.Get),
			humanize.Count(r.Head), humanize.Count(r.Delete), r.USD())
	}
	if f := o.Fresh; !math.IsNaN(float64(f.HourP50)) || !math.IsNaN(float64(f.NowS)) {
		// The appliance's delay first: the events' age holds Wikimedia's
		// delay too, and a replay's back-dating.
		fmt.Fprintf(w, "freshness of %s: intake to commit p50 %s, p95 %s (last hour); event time: newest row %s old, p50 %s at commit\n",
			f.Table, humanize.Seconds(float64(f.HourP50)), humanize.Seconds(float64(f.HourP95)),
			humanize.Seconds(float64(f.NowS)), humanize.Seconds(float64(f.EventHourP50)))
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "\nquery\tbatch\tlag\tlast batch\tlast commit\trows in\trows out\tlate\tduplicates")
	for _, q := range o.Queries {
		t := q.Totals
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f ms\t%.0f ms\t%d\t%d\t%d\t%d\n", q.Name, q.Batch, q.Lag,
			q.LastBatchSecond*1000, q.LastCommitSec*1000, t.RowsIn, t.RowsOut, t.Late, t.Duplicates)
	}
	fmt.Fprintln(tw, "\ntable\tsnapshots\tdata files\trows\tsize")
	for _, t := range o.Tables {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", t.Name, t.Snapshots, t.DataFiles, t.Records, humanize.Bytes(t.DataBytes))
	}
	tw.Flush()
	if r := o.Refresh; r != nil {
		fmt.Fprintf(w, "\nlast marts refresh %s (%s), rebuilt %s:\n", r.Started.Local().Format(time.TimeOnly), time.Duration(r.DurationS*float64(time.Second)).Round(time.Millisecond), r.Scope)
		if r.Err != "" {
			fmt.Fprintf(w, "  FAILED: %s\n", r.Err)
		}
		for _, c := range r.Checks {
			fmt.Fprintf(w, "  %s\n", marts.Check(c))
		}
		if r.Highlights.Headline != "" {
			h := marts.Highlights{Headline: r.Highlights.Headline}
			for _, l := range r.Highlights.Lists {
				h.Lists = append(h.Lists, marts.HighlightList(l))
			}
			fmt.Fprint(w, "  ", strings.ReplaceAll(h.String(), "\n  ", "\n    "))
		}
	}
	if len(o.Log) > 0 {
		fmt.Fprintln(w, "\nrecent warnings and errors:")
		for i, e := range o.Log {
			if i == 5 {
				break
			}
			fmt.Fprintf(w, "  %s %s %s %s\n", e.Time.Local().Format(time.TimeOnly), e.Level, e.Msg, e.Attrs)
		}
	}
}

// writeDisk writes the disk budget: the components, the growth per day
// and the days left before the disk reserve.
func writeDisk(w io.Writer, d observe.Disk) {
	var parts []string
	for _, c := range d.Components {
		parts = append(parts, c.Name+" "+humanize.Bytes(c.Bytes))
	}
	fmt.Fprintf(w, "disk: %s in %s (%s); %s free of %s, reserve %s\n", humanize.Bytes(d.Used), d.Dir,
		strings.Join(parts, ", "), humanize.Bytes(d.Free), humanize.Bytes(d.FSBytes), humanize.Bytes(d.Reserve))
	switch g, left := float64(d.GrowthDay), float64(d.DaysLeft); {
	case math.IsNaN(g):
		fmt.Fprintf(w, "  growth: measuring (needs %s of samples)\n", diskbudget.MinSpan)
	case math.IsNaN(left):
		fmt.Fprintf(w, "  growth: %s/day over the last %s: not growing, no limit in sight\n", humanize.Bytes(int64(g)), time.Duration(d.MeasuredS*float64(time.Second)).Round(time.Minute))
	default:
		fmt.Fprintf(w, "  growth: %s/day over the last %s: %.1f days left before the disk reserve\n", humanize.Bytes(int64(g)), time.Duration(d.MeasuredS*float64(time.Second)).Round(time.Minute), left)
	}
}
