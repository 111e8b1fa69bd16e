package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/localapi"
	"lakehouse/table"
)

// closedByServer reports whether the server has closed c (a read ends
// in EOF or an error other than the deadline) within wait.
// countClosedByServer waits on every connection at once and counts those
// the server closed within wait.
func countClosedByServer(conns []net.Conn, wait time.Duration) int {
	var closed atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if closedByServer(c, wait) {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(closed.Load())
}

func closedByServer(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestIdleConnectionsCannotLockOut: with the connection cap made 4 and a
// token set, 30 connections held idle (15 that never send a request, 15
// that got their 401 and keep the connection) do not lock the appliance
// out: /healthz answers every one of 20 probes on new connections, at
// least 26 of the idle connections are closed by the server (else the
// cap never bit: inconclusive), it never held more than 4, and bronze
// keeps committing the events that arrive.
func TestIdleConnectionsCannotLockOut(t *testing.T) {
	src := replay.New(replay.Config{Seed: 41, Restamp: true, Rate: 100})
	src.Loops(replay.Generate(41, 6000), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) {
		f.HTTPToken, f.Refresh = "s3cret", 0
		f.HTTPBounds.MaxConns = 4
	})
	ctx := context.Background()
	rows := func() int64 {
		st, err := a.p.Lake().Stats(ctx, table.Bronze)
		if err != nil {
			return 0
		}
		return st.Records
	}
	waitFor(t, 2*time.Minute, "bronze's first commit", func() bool { return rows() > 0 })

	host := strings.TrimPrefix(a.base, "http://")
	var idle []net.Conn
	for i := range 30 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i%2 == 1 {
			fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				// An earlier request's connection may be the one closed.
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a request without the token: %d, want 401", resp.StatusCode)
			}
		}
		idle = append(idle, c)
	}
	before := rows()
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	for i := range 20 {
		req, _ := http.NewRequest(http.MethodGet, a.base+"/healthz", nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := probe.Do(req)
		if err != nil {
			t.Fatalf("probe %d of /healthz with 30 idle connections held: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("probe %d of /healthz: %d", i, resp.StatusCode)
		}
	}
	closed := countClosedByServer(idle, 5*time.Second)
	if closed < 26 {
		t.Fatalf("inconclusive: the server closed %d of %d idle connections; want at least 26 at a cap of 4", closed, len(idle))
	}
	if peak := publicConns(a.p).Peak.Load(); peak > 4 {
		t.Errorf("the server held %d connections at once, over the cap of 4", peak)
	}
	t.Logf("%d of %d idle connections closed by the server (%d evicted, %d refused), peak %d open",
		closed, len(idle), publicConns(a.p).Evicted.Load(), publicConns(a.p).Refused.Load(), publicConns(a.p).Peak.Load())
	waitFor(t, 2*time.Minute, "bronze to commit past the idle connections", func() bool { return rows() > before })
}

// TestSlowAndIdleConnectionsClosed: a request whose body trickles in is
// cut off once the read timeout passes, and a keep-alive connection idle
// past the idle timeout is closed, both well before ten seconds with the
// timeouts made 1 s; /healthz is served meanwhile.
func TestSlowAndIdleConnectionsClosed(t *testing.T) {
	src := replay.New(replay.Config{Seed: 43, Restamp: true})
	src.Loops(replay.Generate(43, 50), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) {
		f.Refresh = 0
		f.HTTPBounds.Read, f.HTTPBounds.Idle, f.HTTPBounds.ReadHeader = time.Second, time.Second, time.Second
	})
	host := strings.TrimPrefix(a.base, "http://")
	slow, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprint(slow, "POST /iceberg/v1/lakehouse/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				if _, err := slow.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	kept, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	fmt.Fprint(kept, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(kept)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	if !closedByServer(kept, 10*time.Second) {
		t.Errorf("a keep-alive connection idle for 10 s is still open (idle timeout 1 s)")
	}
	if !closedByServer(slow, 10*time.Second-time.Since(start)) {
		t.Errorf("a request whose body trickles in is still read after 10 s (read timeout 1 s)")
	}
	if code, _ := a.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
}

// TestLargeRESTRequestsRefused: ten 15 MB namespace-property requests in
// parallel are each 400 with the spec's error object naming the bound, and
// catalog.db does not grow by more than a page run; a 300-character table
// name is 400, not a failed metadata write.
func TestLargeRESTRequestsRefused(t *testing.T) {
	dir := t.TempDir()
	src := replay.New(replay.Config{Seed: 45, Restamp: true})
	src.Loops(replay.Generate(45, 50), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) { f.Data, f.Refresh = dir, 0 })
	a.drained(t, src.Counts().OnTime)
	if code, body := a.restCall(t, http.MethodPost, "/namespaces", `{"namespace":["client"]}`); code != http.StatusOK {
		t.Fatalf("create a namespace: %d %s", code, body)
	}
	st, err := os.Stat(filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 15<<20)
	var wg sync.WaitGroup
	codes := make([]int, 10)
	bodies := make([]string, 10)
	for i := range 10 {
		wg.Go(func() {
			codes[i], bodies[i] = a.restCall(t, http.MethodPost, "/namespaces/client/properties", `{"updates":{"k`+fmt.Sprint(i)+`":"`+value+`"}}`)
		})
	}
	wg.Wait()
	for i := range codes {
		typ, msg, code, ok := specError(bodies[i])
		if codes[i] != http.StatusBadRequest || !ok || code != 400 || typ != "BadRequestException" || !strings.Contains(msg, "request body over") {
			t.Errorf("15 MB request %d: %d %.200s", i, codes[i], bodies[i])
		}
	}
	after, err := os.Stat(filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.Size() - st.Size(); grew > 1<<20 {
		t.Errorf("catalog.db grew by %d bytes on refused requests", grew)
	}
	code, body := a.restCall(t, http.MethodPost, "/namespaces/client/tables", `{"name":"`+strings.Repeat("t", 300)+`","schema":`+restSchema+`}`)
	if typ, msg, _, ok := specError(body); code != http.StatusBadRequest || !ok || typ != "BadRequestException" || !strings.Contains(msg, "table name") {
		t.Errorf("a 300-character table name: %d %s", code, body)
	}
}

// TestLocalEndpointIdleConnectionsBounded: the local endpoint that query,
// verify, topics and status use beside a running appliance has the same
// bounds as the public surface: with localapi.MaxConns+16 connections held
// idle by a process without the token, `topics` and `status` still answer
// through it, the server closed at least 16 of the idle ones, its limiter
// evicted or refused at least 16 and it never held more than the cap.
func TestLocalEndpointIdleConnectionsBounded(t *testing.T) {
	src := replay.New(replay.Config{Seed: 44, Restamp: true})
	src.Loops(replay.Generate(44, 200), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) { f.Refresh = 0 })
	dir := a.p.Config().Data
	var info localapi.Info
	waitFor(t, time.Minute, "appliance.json", func() bool {
		var err error
		info, err = localapi.ReadInfo(dir)
		return err == nil
	})
	host := strings.TrimPrefix(info.URL, "http://")
	var idle []net.Conn
	for range localapi.MaxConns + 16 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	for _, cmd := range []string{"topics", "status"} {
		if code, out := cli(cmd, "--data", dir); code != 0 {
			t.Fatalf("%s beside the appliance with %d idle local connections: exit %d\n%s", cmd, len(idle), code, out)
		}
	}
	closed := countClosedByServer(idle, 5*time.Second)
	if closed < 16 {
		t.Fatalf("the local endpoint closed %d of %d idle connections; want at least 16", closed, len(idle))
	}
	_, lim := a.p.Conns()
	if lim == nil || lim.Evicted.Load()+lim.Refused.Load() < 16 || lim.Peak.Load() > localapi.MaxConns {
		t.Fatalf("the local endpoint's cap of %d did not bite: %+v", localapi.MaxConns, lim)
	}
}

// publicConns is the HTTP surface's connection limiter.
func publicConns(p *appliance.Appliance) *httpbound.Limiter {
	pub, _ := p.Conns()
	return pub
}
