package main

import (
	"os"
	"strings"
)

// A role is the part of the appliance one process runs. "all" (the
// default) is the whole appliance in one process on one broker and one
// lake; the others split it into processes that may run on separate
// machines, each restarting on its own, over a broker they share (Kafka)
// and tables they share (an Iceberg REST catalog):
//
//   - ingest: the SSE client, the contract check and the dead-letter queue,
//     appending to the broker. It opens no lake. Its Kafka producer is
//     transactional: a second ingest process fences the first.
//   - stream: the bronze, dead-letter, silver and sessions queries. Their
//     commits are fenced (table.Batch.Fenced): a second stream process on
//     the same tables fails at its first commit and stops.
//   - marts: the gold marts, the asset checks and table maintenance.
const (
	roleAll    = "all"
	roleIngest = "ingest"
	roleStream = "stream"
	roleMarts  = "marts"
)

var roles = []string{roleAll, roleIngest, roleStream, roleMarts}

// envRole is --role in the environment.
const envRole = "LAKEHOUSE_ROLE"

// envOr is the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// runs reports whether the process's role includes component role.
func (f *pipelineFlags) runs(role string) bool {
	return f.role == "" || f.role == roleAll || f.role == role
}

// needsLake reports whether the role reads or writes the tables.
func (f *pipelineFlags) needsLake() bool { return f.runs(roleStream) || f.runs(roleMarts) }

// checkRole checks --role and what a split role needs: a broker and
// tables other processes can share.
func (f *pipelineFlags) checkRole(e *flagErrors) {
	switch f.role {
	case "", roleAll:
		return
	case roleIngest, roleStream, roleMarts:
	default:
		e.add("role", "%q: want one of %s", f.role, strings.Join(roles, ", "))
		return
	}
	if !f.kafkaBroker() {
		e.add("role", "%s: the roles share a broker, and the embedded broker.db is one process's: run them over Kafka with --broker kafka://host:port", f.role)
	}
	if f.role != roleIngest && f.catalog == "" {
		e.add("role", "%s: the stream and marts roles share the tables through an Iceberg REST catalog (--catalog rest+http://...); catalog.db is one data directory's", f.role)
	}
	if f.role != roleIngest && f.noIngest {
		e.add("no-ingest", "with --role %s: only --role all runs ingest; drop --no-ingest", f.role)
	}
}

// roleName is the role for messages.
func (f *pipelineFlags) roleName() string {
	if f.role == "" {
		return roleAll
	}
	return f.role
}
