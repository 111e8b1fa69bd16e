// Package appliance is the running appliance: it opens the broker and the
// lake a Config names, starts ingest, the stream queries, the marts
// scheduler, broker retention, the HTTP surface and the local endpoint,
// and stops them together. It owns the wiring between the packages and the
// rules that need both halves of it: retention never trims what bronze has
// not landed (retention.go, through stream.RetainBronze), and expiry never
// drops a snapshot silver or sessions have not read (streams.go protect,
// through lakeio.Protect). It gathers the observation every status surface
// reads (observe.go) and serves it (http.go, local.go).
//
// Package main turns flags and the environment into a Config and calls
// Open, Run and Close; the bench opens it in process the same way. Store
// also does what the commands that work on a lake do (Query, Verify,
// Reland, Topics, ResetPosition, OddTables), so main only parses their
// flags; Hint gives the way out of the errors they return.
//
// What survives a crash: nothing of its own. The broker, the tables and
// the queries' checkpoints hold every position (their packages say how);
// appliance.json, the local endpoint's file, names a process that may be
// gone, and localapi.Dial refuses it then. A restart recovers each query
// from its checkpoint and the table's marker before it reports ready.
package appliance
