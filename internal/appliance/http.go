package appliance

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

// serveHTTP starts the HTTP surface and returns the function that shuts it
// down (waiting up to 5 s for requests in flight). Its connections are
// bounded in time and number (httpbound).
func (a *Appliance) serveHTTP(ctx context.Context, stderr io.Writer) (func(), error) {
	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen %s (another appliance on this port? pass --http ADDR or --http off): %w", a.cfg.HTTPAddr, err)
	}
	b := a.cfg.HTTPBounds.WithDefaults()
	srv, lim := httpbound.Server(withToken(a.cfg.HTTPToken, a.handler()), ln, b)
	fmt.Fprintf(stderr, "%shttp://%s\n", observe.LinePrefix, ln.Addr())
	a.mu.Lock()
	a.httpURL = "http://" + ln.Addr().String()
	a.httpConns = lim
	a.mu.Unlock()
	a.log.Info("dashboard at http://"+ln.Addr().String()+"/", "metrics", "/metrics", "readiness", "/readyz")
	go func() {
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server stopped", "err", err)
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
func (a *Appliance) WaitHTTP(ctx context.Context) string {
	if a.cfg.HTTPAddr == "" {
		return ""
	}
	for {
		a.mu.Lock()
		u := a.httpURL
		a.mu.Unlock()
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

func (a *Appliance) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", dashboard.Handler())
	mux.HandleFunc("GET "+observe.ObservationPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.Observe(r.Context()))
	})
	mux.HandleFunc("GET "+observe.StatusPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.observeBrief(r.Context(), r.URL.Query()["query"]...).Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.NewRegistry(metricsSource{a}), promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if down := a.health.State().IngestDown; down != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ok: "+down)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		st := a.health.State()
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
	if a.lake != nil { // --role ingest opens no tables
		rest := a.icebergREST()
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
func (a *Appliance) notifyReady(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		a.mu.Lock()
		// A process without the stream role (--role ingest or marts) has
		// no query to recover: it is ready once its components started.
		ready := len(a.queries) > 0 || !a.cfg.Runs(RoleStream)
		for _, q := range a.queries {
			ready = ready && q.QueryID() != ""
		}
		a.mu.Unlock()
		if ready {
			a.notify.ready()
			a.log.Info("appliance started: every query recovered its position", "role", a.cfg.RoleName())
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
func (a *Appliance) settings() map[string]string {
	f := a.cfg
	maxSnapshots := f.MaxSnapshots
	if _, m := a.Components(); m != nil {
		maxSnapshots = m.Config().MaxSnapshots
	}
	source := f.Source
	if f.NoIngest || !f.Runs(RoleIngest) {
		source = "(no ingest)"
	}
	warehouse := "(no tables: --role ingest)"
	if a.lake != nil {
		warehouse = a.lake.Warehouse()
	}
	return map[string]string{
		"data": f.Data, "warehouse": warehouse, "source": source, "role": f.RoleName(), "broker": f.BrokerName(),
		"trigger": f.Trigger.String(), "watermark": f.Watermark.String(), "session_gap": f.SessionGap.String(),
		"session_max": sessionMaxSetting(f.SessionMax),
		"refresh":     f.Refresh.String(), "partitions": strconv.Itoa(f.Partitions),
		"max_snapshots": strconv.Itoa(maxSnapshots), "retention": f.Retention.String(),
		"checkpoint_loss": strings.ToLower(f.CheckpointLoss),
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

// metricsSource is the appliance as /metrics reads it.
type metricsSource struct{ a *Appliance }

func (m metricsSource) Observe(ctx context.Context) observe.Observation { return m.a.Observe(ctx) }

func (m metricsSource) Totals(query string) (telemetry.Totals, bool) { return m.a.tel.Query(query) }

func (m metricsSource) Conns() *httpbound.Limiter {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	return m.a.httpConns
}
