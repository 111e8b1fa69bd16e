// Package localapi is the local endpoint's protocol: how the commands that
// read a lake (query, verify, topics, status) reach an appliance running
// on the same data directory. broker.db and catalog.db admit one bbolt
// process at a time, so beside a running appliance a command cannot open
// them; instead the appliance serves their reads. At start it listens on
// an ephemeral loopback port with a random bearer token and writes both to
// <data>/appliance.json (mode 0600: only the user who can read the data
// directory can use it), and removes the file when it stops. A command
// that finds the file, and an appliance answering at its address, reads
// through it:
//
//   - the tables through the Iceberg REST catalog (read-only) under
//     IcebergPath, planning and reading the data files itself;
//   - the broker's records under BrokerPath (package broker/remote);
//   - a lease under LeasePath, taken before it plans and released when it
//     is done: the appliance's snapshot expiry keeps every leased
//     snapshot, so compaction and expiry never delete a file a command is
//     reading;
//   - the appliance's status under observe.ObservationPath.
//
// The appliance serves the endpoint (internal/appliance's local.go); this
// package holds the file, the paths and the client. A command never
// writes through it, and works as before when nothing runs.
//
// What survives a crash: appliance.json, naming a process that is gone or
// an address nobody answers at; Dial treats it as no appliance.
package localapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lakehouse/internal/durable"
)

// File is the endpoint's file in the data directory.
const File = "appliance.json"

// The endpoint's paths, and its connection cap.
const (
	IcebergPath = "/iceberg" // the lake's catalog over the Iceberg REST protocol (also the public surface's)
	BrokerPath  = "/broker"
	LeasePath   = "/leases"
	MaxConns    = 64 // the readers of one data directory: query, verify, topics, status
)

// Info is appliance.json.
type Info struct {
	PID     int       `json:"pid"`
	URL     string    `json:"url"` // http://127.0.0.1:port
	Token   string    `json:"token"`
	Started time.Time `json:"started"`
	Version string    `json:"version"`
	// Embedded says which bbolt files the appliance holds: "broker",
	// "catalog" (an appliance on Kafka or a REST catalog holds fewer).
	Embedded []string `json:"embedded"`
}

// WriteInfo writes info as data's appliance.json (a temporary file of
// mode 0600, synced and renamed).
func WriteInfo(data string, info Info) error {
	js, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(data, File, append(js, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", File, err)
	}
	return nil
}

// RemoveInfo removes data's appliance.json if it is still info's (a
// later appliance on the same directory may have written its own).
func RemoveInfo(data string, info Info) {
	if cur, err := ReadInfo(data); err == nil && cur.PID == info.PID && cur.Token == info.Token {
		_ = os.Remove(filepath.Join(data, File))
	}
}

// ReadInfo reads data's appliance.json; it refuses an address that is not
// on loopback.
func ReadInfo(data string) (Info, error) {
	var info Info
	path := filepath.Join(data, File)
	b, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("read %s: %w", path, err)
	}
	if info.URL == "" || !strings.HasPrefix(info.URL, "http://127.0.0.1:") {
		return info, fmt.Errorf("read %s: no loopback address", path)
	}
	return info, nil
}
