package bench

import (
	"context"
	"fmt"
	"io"
	"lakehouse/internal/humanize"
	"lakehouse/internal/progress"
	"math"
	"slices"
	"strings"
	"time"
)

// Config is a benchmark run: the phases (every rate with every trigger),
// the separate measurements and the search for the fastest sustained rate.
type Config struct {
	Options
	Rates          []float64
	Triggers       []time.Duration // the first is the default trigger the search uses
	Phase          time.Duration   // length of each phase's publishing
	ProducerEvents int             // events for the producer ceiling (0: skip)
	DrainEvents    int             // backlog for the bronze drain and the silver backlog (0: skip)
	SearchStep     float64         // the search's step (0: skip)
	Display        progress.Display
}

// Run runs every rate with every trigger, the stage ceilings,
// and the step-up search for the fastest sustained rate, into rep.
func Run(ctx context.Context, cfg Config, rep *Report, base string, stdout io.Writer) error {
	rates, triggers := cfg.Rates, cfg.Triggers
	show := cfg.Display
	for _, trig := range triggers {
		for _, rate := range rates {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rep.Phases = append(rep.Phases, cfg.runPhase(ctx, Phase{Rate: rate, Trigger: trig, Duration: cfg.Phase}, base, show))
		}
	}
	if cfg.ProducerEvents > 0 {
		c, err := producerCeiling(ctx, base, cfg.ProducerEvents)
		if err != nil {
			return fmt.Errorf("producer ceiling: %w", err)
		}
		rep.ProducerCeiling, rep.ProducerCPU = c.rate(), c.cpuPerEvent()
		fmt.Fprintf(stdout, "bench: producer ceiling %s events/s, %.1f CPU-µs/event\n", humanize.Count(int64(rep.ProducerCeiling)), rep.ProducerCPU)
	}
	if cfg.DrainEvents > 0 {
		b, s, err := drainCeilings(ctx, base, cfg.DrainEvents)
		if err != nil {
			return fmt.Errorf("drain ceilings: %w", err)
		}
		rep.BronzeDrainRate, rep.BronzeDrainMBps, rep.BronzeDrainCPU = b.rate(), b.mbps(), b.cpuPerEvent()
		rep.SilverBacklogRate, rep.SilverBacklogCPU = s.rate(), s.cpuPerEvent()
		fmt.Fprintf(stdout, "bench: bronze drain %s records/s (%.1f MB/s), %.1f CPU-µs/record\n", humanize.Count(int64(rep.BronzeDrainRate)), rep.BronzeDrainMBps, rep.BronzeDrainCPU)
		fmt.Fprintf(stdout, "bench: silver backlog %s bronze rows/s, %.1f CPU-µs/row\n", humanize.Count(int64(rep.SilverBacklogRate)), rep.SilverBacklogCPU)
	}
	for _, p := range rep.Phases {
		if p.KeptUp && p.Phase.Trigger == triggers[0] && p.Phase.Rate > rep.MaxSustainedRate {
			rep.MaxSustainedRate = p.Phase.Rate
		}
	}
	if cfg.SearchStep > 0 && rep.MaxSustainedRate > 0 {
		top := slices.Max(rates)
		for rate := rep.MaxSustainedRate + cfg.SearchStep; rate < top && ctx.Err() == nil; rate += cfg.SearchStep {
			p := cfg.runPhase(ctx, Phase{Rate: rate, Trigger: triggers[0], Duration: 30 * time.Second}, base, show)
			rep.Search = append(rep.Search, p)
			if !p.KeptUp {
				break
			}
			rep.MaxSustainedRate = rate
		}
	}
	if line := ceilingSummary(*rep); line != "" {
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// ceilingSummary is the run's last line: each stage measured alone (events/s
// and CPU-µs per event), and the end-to-end maximum against the slowest of
// them. "" when no stage was measured alone.
func ceilingSummary(rep Report) string {
	var parts []string
	slowest := math.Inf(1)
	for _, c := range []struct {
		name      string
		rate, cpu float64
	}{{"ingest alone", rep.ProducerCeiling, rep.ProducerCPU}, {"bronze drain", rep.BronzeDrainRate, rep.BronzeDrainCPU}, {"silver backlog", rep.SilverBacklogRate, rep.SilverBacklogCPU}} {
		if c.rate <= 0 {
			continue
		}
		unit := ""
		if len(parts) == 0 {
			unit = " ev/s"
		}
		parts = append(parts, fmt.Sprintf("%s %s%s (%.0f CPU-µs/ev)", c.name, humanize.Count(int64(c.rate)), unit, c.cpu))
		slowest = min(slowest, c.rate)
	}
	if len(parts) == 0 {
		return ""
	}
	line := "bench: stage ceilings: " + strings.Join(parts, ", ")
	if rep.MaxSustainedRate > 0 {
		line += fmt.Sprintf("; end to end max sustained %s = %.0f %% of the slowest stage alone", humanize.Count(int64(rep.MaxSustainedRate)), 100*rep.MaxSustainedRate/slowest)
	}
	return line
}
