package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"lakehouse/internal/observe"
	"lakehouse/internal/procmem"
)

// sampleEvery is how often a service's /proc figures are sampled.
const sampleEvery = 100 * time.Millisecond

// service is the appliance (`run`) as a child process, sampled from
// outside from the moment it starts.
type service struct {
	cmd   *exec.Cmd
	start time.Time
	base  string // http://host:port, once announced
	log   *os.File

	mu      sync.Mutex
	samples []memSample

	done    chan struct{}
	waitErr error
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
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	fmt.Fprintf(f, "\n$ %q\n", cmd.Args)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	s := &service{cmd: cmd, log: f, done: make(chan struct{})}
	s.start = time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if rest, ok := strings.CutPrefix(line, observe.LinePrefix); ok {
				select {
				case addr <- strings.TrimSpace(rest):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr) // never block the child on a full pipe
	}()
	go func() {
		s.waitErr = cmd.Wait()
		pw.Close()
		<-scanned
		close(s.done)
	}()
	go s.sample()
	select {
	case a := <-addr:
		s.base = a
		return s, nil
	case <-s.done:
		f.Close()
		return nil, fmt.Errorf("the appliance exited before serving HTTP (%v); see %s", s.waitErr, logPath)
	case <-time.After(wait):
		s.kill()
		return nil, fmt.Errorf("the appliance did not announce its HTTP surface within %s; see %s", wait, logPath)
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
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
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// read takes one sample now (false: the process is gone).
func (s *service) read() (memSample, bool) {
	pid := s.cmd.Process.Pid
	st, err := procmem.Status(pid, "VmHWM", "VmRSS", "RssAnon", "RssFile")
	if err != nil {
		return memSample{}, false
	}
	m := memSample{T: time.Since(s.start).Seconds(), HWM: st["VmHWM"], RSS: st["VmRSS"], Anon: st["RssAnon"], File: st["RssFile"]}
	if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil {
		m.CPU = statCPUSeconds(string(stat))
	}
	return m, true
}

// elapsed is the time since the child started, in seconds.
func (s *service) elapsed() float64 { return time.Since(s.start).Seconds() }

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
	return os.WriteFile(filepath.Join("/proc", strconv.Itoa(s.cmd.Process.Pid), "clear_refs"), []byte("5"), 0)
}

// getJSON GETs path from the child's HTTP surface into v and returns the
// status code (any code: /readyz answers 503 with a body).
func (s *service) getJSON(ctx context.Context, path string, v any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
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
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *service) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.log.Close()
}

// stop asks the child to stop (SIGTERM) and waits up to grace, then kills
// it. It returns how long the stop took and what went wrong.
func (s *service) stop(grace time.Duration) (float64, error) {
	start := time.Now()
	if s.exited() {
		s.log.Close()
		return 0, fmt.Errorf("the appliance had already exited: %v", s.waitErr)
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(grace):
		s.kill()
		return time.Since(start).Seconds(), fmt.Errorf("the appliance did not stop within %s of SIGTERM", grace)
	}
	s.log.Close()
	var ee *exec.ExitError
	if s.waitErr != nil && !errors.As(s.waitErr, &ee) {
		return time.Since(start).Seconds(), s.waitErr
	}
	if s.waitErr != nil {
		return time.Since(start).Seconds(), fmt.Errorf("the appliance exited with %w after SIGTERM", s.waitErr)
	}
	return time.Since(start).Seconds(), nil
}

// statCPUSeconds returns utime + stime of a /proc/<pid>/stat line, in
// seconds (USER_HZ is 100 on every Linux architecture Go supports). Fields
// are counted after the command name's closing parenthesis.
func statCPUSeconds(stat string) float64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(ut+st) / 100
}
