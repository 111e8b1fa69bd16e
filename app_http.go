package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"lakehouse/internal/dashboard"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/metrics"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/stream/sessions"
	"lakehouse/table/restcatalog"
)

// The HTTP surface.
const (
	defaultHTTPAddr = "127.0.0.1:8080"
	envHTTPToken    = "LAKEHOUSE_HTTP_TOKEN"
)

// errHTTPAddr: --http names an address the appliance must not serve on as
// configured (non-loopback without --http-remote and a token).
var errHTTPAddr = errors.New("refusing to serve HTTP")

// checkHTTP validates the --http settings: "off" (or empty) disables the
// surface; a non-loopback address needs --http-remote and a token.
func (f *pipelineFlags) checkHTTP() error {
	if f.httpAddr == "off" {
		f.httpAddr = ""
	}
	if f.httpAddr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(f.httpAddr)
	if err != nil {
		return fmt.Errorf("--http %q: want host:port or off: %w", f.httpAddr, errUsage)
	}
	if isLoopback(host) {
		return nil
	}
	if !f.httpRemote || f.httpToken == "" {
		return fmt.Errorf("--http %s is not a loopback address: %w without --http-remote and a bearer token (--http-token or %s): %w",
			f.httpAddr, errHTTPAddr, envHTTPToken, errUsage)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveHTTP starts the HTTP surface and returns the function that shuts it
// down (waiting up to 5 s for requests in flight). Its connections are
// bounded in time and number (httpbound).
func (p *pipeline) serveHTTP(ctx context.Context, stderr io.Writer) (func(), error) {
	ln, err := net.Listen("tcp", p.flags.httpAddr)
	if err != nil {
		return nil, fmt.Errorf("listen %s (another appliance on this port? pass --http ADDR or --http off): %w", p.flags.httpAddr, err)
	}
	b := p.flags.httpBounds.WithDefaults()
	srv, lim := httpbound.Server(withToken(p.flags.httpToken, p.handler()), ln, b)
	fmt.Fprintf(stderr, "%shttp://%s\n", observe.LinePrefix, ln.Addr())
	p.mu.Lock()
	p.httpURL = "http://" + ln.Addr().String()
	p.httpConns = lim
	p.mu.Unlock()
	p.log.Info("dashboard at http://"+ln.Addr().String()+"/", "metrics", "/metrics", "readiness", "/readyz")
	go func() {
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("http server stopped", "err", err)
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// waitHTTP returns the HTTP surface's base URL once it listens ("" when
// the surface is off or ctx ends first).
func (p *pipeline) waitHTTP(ctx context.Context) string {
	if p.flags.httpAddr == "" {
		return ""
	}
	for {
		p.mu.Lock()
		u := p.httpURL
		p.mu.Unlock()
		if u != "" {
			return u
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// withToken requires "Authorization: Bearer <token>" on every request when
// token is set (the scheme in any case, as HTTP's auth schemes are; the
// token compared in constant time), except for the dashboard's page and
// assets, which hold no data: the page asks for the token and sends it
// with its requests. A refusal under icebergPath is the Iceberg REST
// spec's error object (its OAuthError at the token endpoint).
func withToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		public := r.Method == http.MethodGet && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/static/"))
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		ok := strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimLeft(got, " ")), want) == 1
		if !public && !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lakehouse"`)
			const msg = "unauthorized: send Authorization: Bearer <token>"
			switch {
			case r.URL.Path == icebergPath+restcatalog.OAuthPath:
				restcatalog.WriteOAuthError(w, http.StatusUnauthorized, "invalid_client", msg)
			case strings.HasPrefix(r.URL.Path, icebergPath+"/"):
				restcatalog.WriteError(w, http.StatusUnauthorized, "NotAuthorizedException", msg)
			default:
				http.Error(w, msg, http.StatusUnauthorized)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *pipeline) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", dashboard.Handler())
	mux.HandleFunc("GET "+observe.ObservationPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.observe(r.Context()))
	})
	mux.HandleFunc("GET "+observe.StatusPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.observeBrief(r.Context(), r.URL.Query()["query"]...).Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.NewRegistry(metricsSource{p}), promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if down := p.health.State().IngestDown; down != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ok: "+down)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		st := p.health.State()
		code := http.StatusOK
		if !st.Ready {
			code = http.StatusServiceUnavailable
		}
		if r.URL.Query().Get("format") == "json" {
			writeJSON(w, code, st)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		if st.Ready {
			fmt.Fprintln(w, "ready")
		} else {
			fmt.Fprintln(w, "not ready:")
			for _, r := range st.Reasons {
				fmt.Fprintln(w, "- "+r)
			}
		}
		for _, r := range st.Warnings {
			fmt.Fprintln(w, "warning: "+r)
		}
	})
	if p.lake != nil { // --role ingest opens no tables
		rest := p.icebergREST()
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete} {
			mux.Handle(m+" "+icebergPath+"/", rest) // methods named: "GET /" would conflict with a bare pattern
		}
	}
	// Go's profiles (heap in use, CPU, goroutines) of the running appliance.
	mux.HandleFunc("GET /debug/pprof/", httppprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", httppprof.Profile)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// notifyReady tells systemd (and the log) that start-up recovery is done:
// once every query has recovered its position (it has a query id).
func (p *pipeline) notifyReady(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		p.mu.Lock()
		// A process without the stream role (--role ingest or marts) has
		// no query to recover: it is ready once its components started.
		ready := len(p.queries) > 0 || !p.flags.runs(roleStream)
		for _, q := range p.queries {
			ready = ready && q.QueryID() != ""
		}
		p.mu.Unlock()
		if ready {
			p.notify.ready()
			p.log.Info("appliance started: every query recovered its position", "role", p.flags.roleName())
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// settings are the configuration the dashboard shows.
func (p *pipeline) settings() map[string]string {
	f := p.flags
	maxSnapshots := f.maxSnapshots
	if _, m := p.components(); m != nil {
		maxSnapshots = m.Config().MaxSnapshots
	}
	source := f.source
	if f.noIngest || !f.runs(roleIngest) {
		source = "(no ingest)"
	}
	warehouse := "(no tables: --role ingest)"
	if p.lake != nil {
		warehouse = p.lake.Warehouse()
	}
	return map[string]string{
		"data": f.data, "warehouse": warehouse, "source": source, "role": f.roleName(), "broker": f.brokerName(),
		"trigger": f.trigger.String(), "watermark": f.watermark.String(), "session_gap": f.sessionGap.String(),
		"session_max": sessionMaxSetting(f.sessionMax),
		"refresh":     f.refresh.String(), "partitions": strconv.Itoa(f.partitions),
		"max_snapshots": strconv.Itoa(maxSnapshots), "retention": f.retention.String(),
		"checkpoint_loss": strings.ToLower(f.checkpointLoss),
	}
}

// sessionMaxSetting shows --session-max as the sessions query applies it
// (0s: no maximum, as the flag says it).
func sessionMaxSetting(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d == 0:
		return sessions.DefaultMaxSessionLength.String()
	}
	return d.String()
}

// metricsSource is the pipeline as /metrics reads it.
type metricsSource struct{ p *pipeline }

func (m metricsSource) Observe(ctx context.Context) observe.Observation { return m.p.observe(ctx) }
func (m metricsSource) Totals(query string) (telemetry.Totals, bool)    { return m.p.tel.Query(query) }
func (m metricsSource) Conns() *httpbound.Limiter {
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	return m.p.httpConns
}
