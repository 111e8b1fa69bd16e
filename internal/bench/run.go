package bench

import (
	"context"
	"fmt"
	"io"
	"lakehouse/internal/humanize"
	"lakehouse/internal/progress"
	"slices"
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
	DrainEvents    int             // backlog for the bronze drain (0: skip)
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
	var err error
	if cfg.ProducerEvents > 0 {
		if rep.ProducerCeiling, err = producerCeiling(ctx, base, cfg.ProducerEvents); err != nil {
			return fmt.Errorf("producer ceiling: %w", err)
		}
		fmt.Fprintf(stdout, "bench: producer ceiling %s events/s\n", humanize.Count(int64(rep.ProducerCeiling)))
	}
	if cfg.DrainEvents > 0 {
		if rep.BronzeDrainRate, rep.BronzeDrainMBps, err = bronzeDrain(ctx, base, cfg.DrainEvents); err != nil {
			return fmt.Errorf("bronze drain: %w", err)
		}
		fmt.Fprintf(stdout, "bench: bronze drain %s records/s (%.1f MB/s)\n", humanize.Count(int64(rep.BronzeDrainRate)), rep.BronzeDrainMBps)
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
	return nil
}
