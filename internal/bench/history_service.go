package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"lakehouse/internal/launch"
)

// sampleEvery is how often a service's /proc figures are sampled.
const sampleEvery = 100 * time.Millisecond

// service is the appliance (`run`) as a child process, sampled from
// outside from the moment it starts.
type service struct {
	*launch.Child

	mu      sync.Mutex
	samples []memSample
}

// memSample is one reading of /proc/<pid>/status and stat.
type memSample struct {
	T                    float64 // seconds since the start
	HWM, RSS, Anon, File int64
	CPU                  float64 // utime + stime, seconds
}

// startService starts cmd, copies its output to logPath, samples it every
// sampleEvery, and waits (up to wait) until it announces its HTTP surface.
func startService(ctx context.Context, cmd *exec.Cmd, logPath string, wait time.Duration) (*service, error) {
	c, err := launch.Spawn(cmd, logPath)
	if err != nil {
		return nil, err
	}
	s := &service{Child: c}
	go s.sample()
	if err := c.Serving(ctx, wait); err != nil {
		return nil, err
	}
	return s, nil
}

// sample reads the child's /proc every sampleEvery until it exits.
func (s *service) sample() {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		if m, ok := s.read(); ok {
			s.mu.Lock()
			s.samples = append(s.samples, m)
			s.mu.Unlock()
		}
		select {
		case <-s.Done():
			return
		case <-t.C:
		}
	}
}

// read takes one sample now (false: the process is gone).
func (s *service) read() (memSample, bool) {
	r, err := readProc(s.Pid())
	if err != nil {
		return memSample{}, false
	}
	return memSample{T: time.Since(s.Started).Seconds(), HWM: r.HWM, RSS: r.RSS, Anon: r.Anon, File: r.File,
		CPU: float64(r.CPUTicks) / clockTicks}, true
}

// elapsed is the time since the child started, in seconds.
func (s *service) elapsed() float64 { return time.Since(s.Started).Seconds() }

// now takes a sample and records it: the figures at this moment (VmHWM is
// the peak so far).
func (s *service) now() memSample {
	m, ok := s.read()
	if !ok {
		return s.last()
	}
	s.mu.Lock()
	s.samples = append(s.samples, m)
	s.mu.Unlock()
	return m
}

func (s *service) last() memSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return memSample{}
	}
	return s.samples[len(s.samples)-1]
}

// peaks returns the largest sampled RssAnon and RssFile in [from, to]
// (seconds since the start).
func (s *service) peaks(from, to float64) (anon, file int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.samples {
		if m.T >= from && m.T <= to {
			anon, file = max(anon, m.Anon), max(file, m.File)
		}
	}
	return anon, file
}

// resetPeak sets the child's VmHWM to its current RSS (clear_refs 5), so a
// later VmHWM is the peak since now.
func (s *service) resetPeak() error {
	return os.WriteFile(filepath.Join("/proc", strconv.Itoa(s.Pid()), "clear_refs"), []byte("5"), 0)
}

// getJSON GETs path from the child's HTTP surface into v and returns the
// status code (any code: /readyz answers 503 with a body).
func (s *service) getJSON(ctx context.Context, path string, v any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s: %s: decode: %w", path, resp.Status, err)
	}
	return resp.StatusCode, nil
}

// exited reports whether the child has ended.
func (s *service) exited() bool {
	ended, _ := s.Exited()
	return ended
}

// stop asks the child to stop (SIGTERM) and waits up to grace, then kills
// it. It returns how long the stop took and what went wrong.
func (s *service) stop(grace time.Duration) (float64, error) {
	start := time.Now()
	err := s.Stop(grace)
	return time.Since(start).Seconds(), err
}
