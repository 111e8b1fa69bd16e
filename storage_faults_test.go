package main

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/fault"
	"lakehouse/internal/health"
	"lakehouse/internal/observe"
	"lakehouse/internal/progress"
	"lakehouse/stream"
	"lakehouse/table"
	"lakehouse/table/catalog"
	"lakehouse/verify"
)

// TestFullDiskPausesAndResumes: a full disk (ENOSPC) at each write seam of
// the running appliance while events keep arriving: the broker's append
// (ingest), a file of the warehouse (data file, manifest, metadata), the
// catalog's pointer swap, and a checkpoint file. The component that writes
// there pauses instead of stopping the appliance: /readyz turns 503 naming
// the pause, /api/status and /metrics show it; once space returns it
// resumes by itself, and every event lands exactly once (verify against
// the broker and the tables, nothing pending, silver complete).
//
// Each wait is on its condition, bounded by pauseBound: a retry backs off
// up to a minute, and on a loaded machine a drain after it can take far
// longer than it takes on an idle one, so a tight deadline fails a slow
// machine rather than a broken appliance.
func TestFullDiskPausesAndResumes(t *testing.T) {
	const pauseBound = 5 * time.Minute
	for _, seam := range []struct {
		name, point string
		who         string // the /api/status component that must show the pause
	}{
		{"broker-append", broker.FailAppend, "ingest"},
		{"warehouse-write", table.FailWrite, stream.BronzeQuery},
		{"catalog-swap", catalog.FailSwap, stream.BronzeQuery},
		{"checkpoint-write", stream.FailCheckpointWrite, stream.BronzeQuery},
	} {
		t.Run(seam.name, func(t *testing.T) {
			defer fault.Disarm()
			rec := replay.Generate(31, 300)
			src := replay.New(replay.Config{Seed: 31, Restamp: true})
			src.Loops(rec, 1)
			a := startAppliance(t, src, nil)
			a.drained(t, src.Counts().OnTime)

			var hits atomic.Int64
			full := &fs.PathError{Op: "write", Path: "injected", Err: syscall.ENOSPC}
			fault.ArmErr(seam.point, func() error { hits.Add(1); return full })
			src.Loops(rec, 1) // arrives while the disk is full
			var reason string
			waitFor(t, pauseBound, seam.who+" to show a pause", func() bool {
				a.alive(t)
				o := a.observation(t)
				reason = pausedReason(o, seam.who)
				return reason != ""
			})
			if !strings.Contains(reason, "no space left on device") {
				t.Errorf("the pause does not say why: %q", reason)
			}
			waitFor(t, pauseBound, "/readyz to say 503 paused", func() bool {
				code, body := a.get(t, "/readyz")
				return code == http.StatusServiceUnavailable && strings.Contains(body, "paused")
			})
			_, metrics := a.get(t, "/metrics")
			if !strings.Contains(metrics, pausedMetric(seam.who)+" 1") {
				t.Errorf("/metrics does not show %s 1", pausedMetric(seam.who))
			}
			waitFor(t, pauseBound, "a retry that fails again", func() bool { return hits.Load() >= 2 })
			a.alive(t)

			fault.Disarm() // space is back
			c := src.Counts()
			waitFor(t, pauseBound, "the pipeline to drain after the pause", func() bool {
				return a.p.Status(context.Background()).Drained(ingest.DefaultTopic, c.OnTime)
			})
			waitFor(t, pauseBound, "the pause to end and /readyz to be 200", func() bool {
				code, _ := a.get(t, "/readyz")
				return code == http.StatusOK && pausedReason(a.observation(t), seam.who) == ""
			})
			r, err := verify.Run(context.Background(), a.p.Broker(), a.p.Lake(), verify.Expect{Messages: c.OnTime, Silver: c.OnTimeEditNew}, progress.Display{})
			if err != nil {
				t.Fatal(err)
			}
			if !r.OK() {
				t.Fatalf("verify after the pause: %v: %+v", r.FailedNames(), r.Failed())
			}
		})
	}
}

// alive fails the test if the appliance has stopped.
func (a *testAppliance) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-a.errc:
		a.errc <- err // for stop
		t.Fatalf("the appliance stopped: %v", err)
	default:
	}
}

// pausedReason is what the observation says about who's pause ("": none).
func pausedReason(o observe.Observation, who string) string {
	if who == "ingest" {
		if o.Ingest != nil {
			return o.Ingest.Paused
		}
		return ""
	}
	for _, q := range o.Queries {
		if q.Name == who && q.Paused != nil {
			return q.Paused.Err
		}
	}
	return ""
}

func pausedMetric(who string) string {
	if who == "ingest" {
		return "lakehouse_ingest_paused"
	}
	return `lakehouse_query_paused{query="` + who + `"}`
}

// TestS3OutagePausesAndResumes: the S3 server of an S3 warehouse stops
// answering for 30 s (every connection is cut) in the middle of a run
// while events keep arriving: the queries pause (shown on /readyz and
// /api/status) instead of the appliance exiting, resume by themselves when
// S3 is back, and every event lands exactly once.
func TestS3OutagePausesAndResumes(t *testing.T) {
	mem := s3mem.New()
	if err := mem.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	inner := gofakes3.New(mem).Server()
	var down atomic.Bool
	var cut atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			cut.Add(1)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close() // as a server that went away mid-request
				return
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")

	rec := replay.Generate(37, 300)
	src := replay.New(replay.Config{Seed: 37, Restamp: true})
	src.Loops(rec, 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) { f.Warehouse = "s3://lake/wh" })
	a.drained(t, src.Counts().OnTime)

	down.Store(true)
	outage := time.Now()
	src.Loops(rec, 1) // arrives during the outage
	waitFor(t, 30*time.Second, "bronze to pause on the outage", func() bool {
		a.alive(t)
		return pausedReason(a.observation(t), stream.BronzeQuery) != ""
	})
	waitFor(t, 10*time.Second, "/readyz to say 503 paused", func() bool {
		code, body := a.get(t, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "paused")
	})
	time.Sleep(time.Until(outage.Add(30 * time.Second)))
	a.alive(t)
	if cut.Load() == 0 {
		t.Fatal("inconclusive: no request reached the S3 server during the outage")
	}
	down.Store(false)

	c := src.Counts()
	a.drained(t, c.OnTime)
	waitFor(t, 90*time.Second, "the pause to end and /readyz to be 200", func() bool {
		code, _ := a.get(t, "/readyz")
		return code == http.StatusOK && pausedReason(a.observation(t), stream.BronzeQuery) == ""
	})
	r, err := verify.Run(context.Background(), a.p.Broker(), a.p.Lake(), verify.Expect{Messages: c.OnTime, Silver: c.OnTimeEditNew}, progress.Display{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("verify after the outage: %v: %+v", r.FailedNames(), r.Failed())
	}
	t.Logf("%d requests cut during the 30 s outage", cut.Load())
}
