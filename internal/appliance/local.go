package appliance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/broker"
	"lakehouse/broker/remote"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/localapi"
	"lakehouse/internal/observe"
	"lakehouse/table"
	"lakehouse/table/restcatalog"
)

// The local endpoint (package internal/localapi says what it is for and
// serves) runs beside the HTTP surface; the appliance writes
// appliance.json once it listens and removes it as it stops.

// serveLocal starts the local endpoint and writes appliance.json; the
// returned function stops it and removes the file.
func (a *Appliance) serveLocal(ctx context.Context) (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local endpoint: %w", err)
	}
	var tok [24]byte
	if _, err := rand.Read(tok[:]); err != nil {
		ln.Close()
		return nil, fmt.Errorf("local endpoint: %w", err)
	}
	info := localapi.Info{PID: os.Getpid(), URL: "http://" + ln.Addr().String(), Token: hex.EncodeToString(tok[:]),
		Started: time.Now().UTC(), Version: a.cfg.Version}
	if _, ok := a.db.(*broker.DB); ok {
		info.Embedded = append(info.Embedded, "broker")
	}
	if a.lake != nil && a.cfg.Catalog == "" {
		info.Embedded = append(info.Embedded, "catalog")
	}
	// The same bounds as the public surface, with a cap of its own: a local
	// process without the token must not hold the descriptors either.
	b := httpbound.Defaults
	b.MaxConns = localapi.MaxConns
	srv, lim := httpbound.Server(withToken(info.Token, a.localHandler()), ln, b)
	a.mu.Lock()
	a.localConns = lim
	a.mu.Unlock()
	go func() {
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("local endpoint stopped", "err", err)
		}
	}()
	if err := localapi.WriteInfo(a.cfg.Data, info); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("local endpoint: %w", err)
	}
	return func() {
		// Removed first: a command starting now opens the files, which the
		// appliance releases as it stops.
		localapi.RemoveInfo(a.cfg.Data, info)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// localHandler serves the local endpoint's routes.
func (a *Appliance) localHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+observe.ObservationPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.Observe(r.Context()))
	})
	mux.Handle(localapi.BrokerPath+"/", http.StripPrefix(localapi.BrokerPath, remote.Handler(a.db)))
	if a.lake != nil {
		rest := restcatalog.New(a.lake.Catalog(), restcatalog.Options{
			ReadOnly: func(icetable.Identifier) bool { return true },
			Config:   a.lake.ReaderConfig(),
			Logger:   a.log,
		})
		mux.Handle("GET "+icebergPath+"/", http.StripPrefix(icebergPath, rest))
		mux.Handle("HEAD "+icebergPath+"/", http.StripPrefix(icebergPath, rest))
		mux.HandleFunc("POST "+localapi.LeasePath, func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Tables []string `json:"tables"`
				TTL    string   `json:"ttl"`
			}
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
				http.Error(w, "lease: "+err.Error(), http.StatusBadRequest)
				return
			}
			ttl, err := time.ParseDuration(req.TTL)
			if err != nil || ttl <= 0 {
				http.Error(w, fmt.Sprintf("lease: ttl %q: want a positive duration", req.TTL), http.StatusBadRequest)
				return
			}
			ls, err := a.lake.Lease(r.Context(), req.Tables, ttl)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			writeJSON(w, http.StatusOK, ls)
		})
		mux.HandleFunc("DELETE "+localapi.LeasePath+"/{id}", func(w http.ResponseWriter, r *http.Request) {
			if err := a.lake.Release(r.PathValue("id")); errors.Is(err, table.ErrNoLease) {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	}
	return mux
}
