package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/observe"
)

// steadySeed seeds the steady phase's replay: other event ids than the
// demo's (seed 1), so silver keeps every event it feeds.
const steadySeed = 2

// SteadyResult is the steady phase: the appliance started again on the
// lake with ingest, fed live-like events (stamped when sent) at the lake's
// density, refreshing every cfg.Refresh. Its first refresh is the one after
// this start; the steady ones are the SteadyRefreshes after it that
// started after ingest had stored new events (seen on /api/status) since
// the previous refresh started, each rebuilding what those events changed.
type SteadyResult struct {
	Args          []string     `json:"args"`
	RatePerSecond float64      `json:"rate_per_s"`
	Sent          int64        `json:"sent"`     // events the replay sent
	Appended      int64        `json:"appended"` // events ingest stored, at the end
	Refreshes     []RefreshRun `json:"refreshes"`
	// Idle counts refreshes left out of the steady ones because ingest had
	// stored no new event between the previous refresh and their start.
	Idle int `json:"idle_refreshes,omitempty"`
	// SteadySeconds is the median duration of the refreshes after the
	// first (-1: none ended within the wait).
	SteadySeconds float64 `json:"steady_s"`
	// Over the steady refreshes (from the end of the first refresh to the
	// end of the last): VmHWM (reset at the start of the window), sampled
	// RssAnon and RssFile peaks.
	HWMSteady   int64   `json:"hwm_steady_bytes"`
	AnonSteady  int64   `json:"peak_anon_steady_bytes"`
	FileSteady  int64   `json:"peak_file_steady_bytes"`
	StopSeconds float64 `json:"stop_s"`
	Err         string  `json:"error,omitempty"`
}

// measureSteady runs the steady phase on lake.
func measureSteady(ctx context.Context, cfg HistoryConfig, lake, logPath string, say func(string, ...any)) SteadyResult {
	res := SteadyResult{SteadySeconds: -1, RatePerSecond: float64(cfg.EventsPerDay) / 86400}
	src := replay.New(replay.Config{Seed: steadySeed, Restamp: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer src.Close()
	feed := src.Feed(replay.Generate(steadySeed, cfg.Recording))
	// The lake's ingest position is the demo's replay's; this replay is a
	// new stream, read from its start, as an operator would point the
	// appliance at a new source.
	if run, _ := runChild(ctx, cfg.Launch, logPath, "reset-position", "--data", lake, "--latest"); run.ExitCode != 0 || run.Err != "" {
		res.Err = fmt.Sprintf("reset-position: exit %d %s: %s", run.ExitCode, run.Err, oneLine(run.Output, 3))
		return res
	}
	res.Args = []string{"run", "--data", lake, "--source", url, "--http", "127.0.0.1:0", "--refresh", cfg.Refresh.String()}
	say("steady: lakehouse %s, fed %.2f events/s", strings.Join(res.Args, " "), res.RatePerSecond)
	svc, err := startService(ctx, cfg.Launch(res.Args...), logPath, cfg.ReadyTimeout)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	feedCtx, stopFeed := context.WithCancel(ctx)
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		feedAt(feedCtx, feed, res.RatePerSecond)
	}()

	// The first refresh may rebuild every day (ReadyTimeout bounds it, as
	// it bounds ready); each later one is due Refresh after the previous.
	deadline := time.Now().Add(cfg.ReadyTimeout)
	lastRun := ""
	var windowStart float64
	var polls []appendedAt // ingest's count at each read of /api/status
	prevStart := 0.0       // when the previous refresh started
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	for len(res.Refreshes) < 1+cfg.SteadyRefreshes {
		if res.Err != "" {
			break
		}
		if svc.exited() {
			res.Err = fmt.Sprintf("the appliance exited during the steady phase (%v); see %s", svc.Wait(), logPath)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			res.Err = fmt.Sprintf("%d of %d refreshes ended within the wait; see %s", len(res.Refreshes), 1+cfg.SteadyRefreshes, logPath)
			break
		}
		var st observe.Observation
		if _, err := svc.getJSON(ctx, observe.ObservationPath, &st); err == nil {
			if st.Ingest != nil {
				res.Appended = st.Ingest.Appended
				polls = append(polls, appendedAt{svc.elapsed(), st.Ingest.Appended})
			}
			r := refreshRun(st, svc.Started)
			if r != nil && r.RunID != lastRun {
				lastRun = r.RunID
				switch {
				case len(res.Refreshes) > 0 && !storedBetween(polls, prevStart, r.StartS):
					res.Idle++
					say("steady: a refresh with no event stored since the previous one started: %.1f s, %s (not counted)", r.Seconds, r.Scope)
					if res.Idle > 2*(1+cfg.SteadyRefreshes) {
						res.Err = fmt.Sprintf("%d refreshes with no new event stored before them: ingest is not storing the events fed (stored %d); see %s", res.Idle, res.Appended, logPath)
					}
				default:
					res.Refreshes = append(res.Refreshes, *r)
					say("steady: refresh %d ended: %.1f s, %s, checks passed %v", len(res.Refreshes), r.Seconds, r.Scope, r.Passed)
				}
				if len(res.Refreshes) == 1 && windowStart == 0 {
					if err := svc.resetPeak(); err != nil {
						res.Err = "reset VmHWM: " + err.Error()
					}
					windowStart = svc.elapsed()
				}
				prevStart = r.StartS
				deadline = time.Now().Add(cfg.Refresh + cfg.ReadyTimeout)
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	m := svc.now()
	if len(res.Refreshes) > 1 {
		res.HWMSteady = m.HWM
		res.AnonSteady, res.FileSteady = svc.peaks(windowStart, m.T)
		var d []float64
		for _, r := range res.Refreshes[1:] {
			d = append(d, r.Seconds)
		}
		res.SteadySeconds = median(d)
	}
	stopFeed()
	<-fed
	res.Sent = src.Counts().Sent
	stopS, err := svc.stop(historyStopGrace)
	res.StopSeconds = stopS
	if err != nil && res.Err == "" {
		res.Err = "stop: " + err.Error()
	}
	return res
}

// appendedAt is ingest's count of stored events at a moment (seconds since
// the process started).
type appendedAt struct {
	t float64
	n int64
}

// storedBetween reports whether the polls prove that ingest stored an event
// after from and before to: the count at the last poll at or before to
// exceeds the count at the first poll at or after from.
func storedBetween(polls []appendedAt, from, to float64) bool {
	first, last := int64(-1), int64(-1)
	for _, p := range polls {
		if p.t >= from && first < 0 {
			first = p.n
		}
		if p.t <= to {
			last = p.n
		}
	}
	return first >= 0 && last > first
}

// feedAt enqueues events at rate per second, every 100 ms what is due,
// until ctx ends.
func feedAt(ctx context.Context, f *replay.Feed, rate float64) {
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	enq := 0
	for {
		if due := int(time.Since(start).Seconds() * rate); due > enq {
			f.Next(due - enq)
			enq = due
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// median of values (-1 for none).
func median(values []float64) float64 {
	if len(values) == 0 {
		return -1
	}
	v := slices.Clone(values)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
