// Package replay plays the part of Wikimedia EventStreams for the demo, the
// tests, the benchmarks, prove and the soak: an SSE server on loopback
// (Server) that sends events with the real stream's wire format, ids and
// resume behaviour ("at or before" Last-Event-ID, or exactly after it), and
// a generator (Generate) of events shaped like the 50 real ones embedded
// under sample/, with contract violations (Violate), late events, canaries
// and oversized events mixed in on request. Counts say what a scenario
// should find in the broker, bronze, silver and the DLQ.
//
// Nothing here is durable: the server holds its events in memory, and a
// restarted server is a new stream. The appliance itself never imports this
// package outside the demo and the benchmark and proof commands.
package replay
