package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"lakehouse/internal/syncbuf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// envRequireBrowser set to 1 makes the tests that drive Chromium fail when
// it is not installed, instead of skipping. .ci/run installs Chromium and
// sets it, so CI always tests the dashboard in a real browser, while
// `go test ./...` on a fresh machine with only Go and gcc passes.
const envRequireBrowser = "LAKEHOUSE_REQUIRE_BROWSER"

// chromium is a headless Chromium this test started, driven over the
// DevTools protocol: one websocket to the browser's endpoint, one flat
// session per page.
type chromium struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer // Chromium's own output, for failure messages
	ws     *websocket.Conn

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan cdpMessage
	pages   map[string]*page // by session id
	readErr error            // why the websocket stopped (nil while it reads)
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startChromium starts Debian's Chromium headless with a fresh profile and
// the flags this closed network needs (no background connections), and
// connects to its DevTools endpoint. When Chromium is not installed it skips
// the test with a one-line reason, or fails it if LAKEHOUSE_REQUIRE_BROWSER=1.
func startChromium(t *testing.T) *chromium {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv(envRequireBrowser) == "1" {
			t.Fatalf("chromium is not on PATH and %s=1: this test drives it headless (apt-get install -y chromium; .ci/run does)", envRequireBrowser)
		}
		t.Skipf("chromium is not on PATH: not testing the dashboard in a browser (apt-get install -y chromium; %s=1 makes this a failure)", envRequireBrowser)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
		"--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1", "--user-data-dir="+dir, "about:blank")
	b := &chromium{cmd: cmd, stderr: &syncbuf.Buffer{}, pending: map[int64]chan cdpMessage{}, pages: map[string]*page{}}
	cmd.Stdout, cmd.Stderr = b.stderr, b.stderr
	// Its own process group: the launcher script, the browser and its
	// renderer and GPU processes are ended together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { b.close(exited) })

	// Chromium writes the port it chose, and the browser endpoint's path,
	// to DevToolsActivePort in the profile once it listens. A cold start
	// (its 300 MB of code not yet in the page cache, the other packages'
	// tests compiling and running beside it) has taken more than 30 s on
	// this 2-core machine; a warm one takes under a second.
	const startTimeout = 2 * time.Minute
	var port, path string
	started := time.Now()
	deadline := started.Add(startTimeout)
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if lines := strings.Fields(string(data)); len(lines) == 2 {
				port, path = lines[0], lines[1]
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("chromium exited before its DevTools endpoint came up:\n%s", b.stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium's DevTools endpoint did not come up in %v:\n%s", startTimeout, b.stderr)
		}
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Logf("chromium took %v to start (a cold start)", took.Round(100*time.Millisecond))
	}
	ws, err := websocket.Dial("ws://127.0.0.1:"+port+path, "", "http://127.0.0.1")
	if err != nil {
		t.Fatalf("connect to chromium's DevTools endpoint: %v\n%s", err, b.stderr)
	}
	ws.MaxPayloadBytes = 64 << 20 // screenshots
	b.ws = ws
	go b.read()
	return b
}

// close asks the browser to quit, then ends its process group if it has
// not within 5 s.
func (b *chromium) close(exited <-chan struct{}) {
	if b.ws != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = b.call(ctx, "", "Browser.close", nil, nil)
		cancel()
		b.ws.Close()
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// read delivers replies to their callers and events to their pages until
// the websocket closes.
func (b *chromium) read() {
	for {
		var raw []byte
		if err := websocket.Message.Receive(b.ws, &raw); err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				delete(b.pending, m.ID)
				ch <- m
			}
		} else if p := b.pages[m.SessionID]; p != nil {
			p.event(m)
		}
		b.mu.Unlock()
	}
}

// call sends method with params in session ("" for the browser) and decodes
// the result into result (if not nil).
func (b *chromium) call(ctx context.Context, session, method string, params, result any) error {
	if params == nil {
		params = struct{}{}
	}
	ps, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan cdpMessage, 1)
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: devtools connection closed: %w", method, b.readErr)
	}
	b.nextID++
	id := b.nextID
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(cdpMessage{ID: id, SessionID: session, Method: method, Params: ps})
	if err != nil {
		return err
	}
	if err := websocket.Message.Send(b.ws, string(msg)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: devtools connection closed", method)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// page is one tab. It records the console errors and uncaught exceptions
// the page produces from the moment it was opened.
type page struct {
	b       *chromium
	session string

	mu       sync.Mutex
	problems []string
}

// newPage opens a blank tab with the Runtime, Log and Page domains on, so
// that nothing the page logs is missed.
func (b *chromium) newPage(ctx context.Context, width, height int) (*page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &page{b: b, session: att.SessionID}
	b.mu.Lock()
	b.pages[p.session] = p
	b.mu.Unlock()
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		if err := p.call(ctx, m, nil, nil); err != nil {
			return nil, err
		}
	}
	return p, p.resize(ctx, width, height)
}

func (p *page) call(ctx context.Context, method string, params, result any) error {
	return p.b.call(ctx, p.session, method, params, result)
}

// event records console errors (console.error, console.assert), uncaught
// exceptions and browser log entries at level error (failed loads among
// them). It runs on the reader goroutine with b.mu held.
func (p *page) event(m cdpMessage) {
	var problem string
	switch m.Method {
	case "Runtime.exceptionThrown":
		var e struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				URL       string `json:"url"`
				Line      int    `json:"lineNumber"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		_ = json.Unmarshal(m.Params, &e)
		d := e.ExceptionDetails
		problem = fmt.Sprintf("uncaught exception at %s:%d: %s %s", d.URL, d.Line+1, d.Text, d.Exception.Description)
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		_ = json.Unmarshal(m.Params, &e)
		if e.Type != "error" && e.Type != "assert" {
			return
		}
		var parts []string
		for _, a := range e.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, fmt.Sprint(a.Value))
			}
		}
		problem = "console." + e.Type + ": " + strings.Join(parts, " ")
	case "Log.entryAdded":
		var e struct {
			Entry struct {
				Level  string `json:"level"`
				Source string `json:"source"`
				Text   string `json:"text"`
				URL    string `json:"url"`
			} `json:"entry"`
		}
		_ = json.Unmarshal(m.Params, &e)
		if e.Entry.Level != "error" {
			return
		}
		problem = fmt.Sprintf("log (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
	default:
		return
	}
	p.mu.Lock()
	p.problems = append(p.problems, problem)
	p.mu.Unlock()
}

// takeProblems returns the console errors and exceptions recorded so far
// and forgets them.
func (p *page) takeProblems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.problems
	p.problems = nil
	return out
}

func (p *page) navigate(ctx context.Context, url string) error {
	var r struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.call(ctx, "Page.navigate", map[string]any{"url": url}, &r); err != nil {
		return err
	}
	if r.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", url, r.ErrorText)
	}
	return nil
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its JSON-compatible value into out.
func (p *page) eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		return fmt.Errorf("evaluate %q: %s %s", expr, e.Text, e.Exception.Description)
	}
	if out == nil {
		return nil
	}
	if len(r.Result.Value) == 0 {
		return errors.New("evaluate: no value")
	}
	return json.Unmarshal(r.Result.Value, out)
}

// resize sets the viewport (CSS pixels).
func (p *page) resize(ctx context.Context, width, height int) error {
	return p.call(ctx, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// screenshot writes a PNG of the whole page at the given width to path.
func (p *page) screenshot(ctx context.Context, path string, width int) error {
	if err := p.resize(ctx, width, 800); err != nil {
		return err
	}
	var height int
	if err := p.eval(ctx, `new Promise(r => requestAnimationFrame(() => r(document.documentElement.scrollHeight)))`, &height); err != nil {
		return err
	}
	if err := p.resize(ctx, width, height); err != nil {
		return err
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := p.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}
