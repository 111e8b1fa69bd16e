package main

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
	"path/filepath"
	"strings"
	"time"

	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/broker"
	"lakehouse/broker/remote"
	"lakehouse/internal/durable"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/observe"
	"lakehouse/table"
	"lakehouse/table/restcatalog"
)

// The local endpoint is how the commands that read a lake (query, verify,
// topics, status) reach an appliance running on the same data directory.
// broker.db and catalog.db admit one bbolt process at a time, so beside a
// running appliance a command cannot open them; instead the appliance
// serves their reads. At start it listens on an ephemeral loopback port
// with a random bearer token and writes both to <data>/appliance.json
// (mode 0600: only the user who can read the data directory can use it),
// and removes the file when it stops. A command that finds the file, and an
// appliance answering at its address, reads through it:
//
//   - the tables through the Iceberg REST catalog (read-only) under
//     /iceberg, planning and reading the data files itself;
//   - the broker's records under /broker (package broker/remote);
//   - a lease under /leases, taken before it plans and released when it
//     is done: the appliance's snapshot expiry keeps every leased snapshot,
//     so compaction and expiry never delete a file a command is reading;
//   - the appliance's status under /api/status.
//
// The endpoint runs whatever --http says (it serves nothing --http does not
// already serve, to the data directory's owner only), and a command never
// writes through it. The commands work as before when nothing runs.
const applianceFile = "appliance.json"

// localInfo is appliance.json.
type localInfo struct {
	PID     int       `json:"pid"`
	URL     string    `json:"url"` // http://127.0.0.1:port
	Token   string    `json:"token"`
	Started time.Time `json:"started"`
	Version string    `json:"version"`
	// Embedded says which bbolt files the appliance holds: "broker",
	// "catalog" (an appliance on Kafka or a REST catalog holds fewer).
	Embedded []string `json:"embedded"`
}

// Local endpoint paths.
const (
	localMaxConns   = 64 // the readers of one data directory: query, verify, topics, status
	localBrokerPath = "/broker"
	localLeasePath  = "/leases"
)

// serveLocal starts the local endpoint and writes appliance.json; the
// returned function stops it and removes the file.
func (p *pipeline) serveLocal(ctx context.Context) (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local endpoint: %w", err)
	}
	var tok [24]byte
	if _, err := rand.Read(tok[:]); err != nil {
		ln.Close()
		return nil, fmt.Errorf("local endpoint: %w", err)
	}
	info := localInfo{PID: os.Getpid(), URL: "http://" + ln.Addr().String(), Token: hex.EncodeToString(tok[:]),
		Started: time.Now().UTC(), Version: buildVersion()}
	if _, ok := p.db.(*broker.DB); ok {
		info.Embedded = append(info.Embedded, "broker")
	}
	if p.lake != nil && p.flags.catalog == "" {
		info.Embedded = append(info.Embedded, "catalog")
	}
	// The same bounds as the public surface, with a cap of its own: a local
	// process without the token must not hold the descriptors either.
	b := httpbound.Defaults
	b.MaxConns = localMaxConns
	srv, lim := httpbound.Server(withToken(info.Token, p.localHandler()), ln, b)
	p.mu.Lock()
	p.localConns = lim
	p.mu.Unlock()
	go func() {
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("local endpoint stopped", "err", err)
		}
	}()
	js, err := json.MarshalIndent(info, "", "  ")
	if err == nil {
		err = durable.WriteFile(p.flags.data, applianceFile, append(js, '\n')) // a temp file of mode 0600, renamed
	}
	if err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("local endpoint: write %s: %w", applianceFile, err)
	}
	return func() {
		// Removed first: a command starting now opens the files, which the
		// appliance releases as it stops.
		if cur, err := readLocalInfo(p.flags.data); err == nil && cur.PID == info.PID && cur.Token == info.Token {
			_ = os.Remove(filepath.Join(p.flags.data, applianceFile))
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// localHandler serves the local endpoint's routes.
func (p *pipeline) localHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+observe.ObservationPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.observe(r.Context()))
	})
	mux.Handle(localBrokerPath+"/", http.StripPrefix(localBrokerPath, remote.Handler(p.db)))
	if p.lake != nil {
		rest := restcatalog.New(p.lake.Catalog(), restcatalog.Options{
			ReadOnly: func(icetable.Identifier) bool { return true },
			Config:   p.lake.ReaderConfig(),
			Logger:   p.log,
		})
		mux.Handle("GET "+icebergPath+"/", http.StripPrefix(icebergPath, rest))
		mux.Handle("HEAD "+icebergPath+"/", http.StripPrefix(icebergPath, rest))
		mux.HandleFunc("POST "+localLeasePath, func(w http.ResponseWriter, r *http.Request) {
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
			ls, err := p.lake.Lease(r.Context(), req.Tables, ttl)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			writeJSON(w, http.StatusOK, ls)
		})
		mux.HandleFunc("DELETE "+localLeasePath+"/{id}", func(w http.ResponseWriter, r *http.Request) {
			if err := p.lake.Release(r.PathValue("id")); errors.Is(err, table.ErrNoLease) {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	}
	return mux
}

// readLocalInfo reads <data>/appliance.json.
func readLocalInfo(data string) (localInfo, error) {
	var info localInfo
	b, err := os.ReadFile(filepath.Join(data, applianceFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("read %s: %w", filepath.Join(data, applianceFile), err)
	}
	if info.URL == "" || !strings.HasPrefix(info.URL, "http://127.0.0.1:") {
		return info, fmt.Errorf("read %s: no loopback address", filepath.Join(data, applianceFile))
	}
	return info, nil
}
