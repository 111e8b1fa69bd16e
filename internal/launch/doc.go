// Package launch starts the appliance as a child process, and the
// services a child connects to over loopback (an in-memory S3, a Kafka
// cluster), for the harnesses that watch a whole appliance from outside:
// the kill test (verify's Prove), the soak and the history benchmark
// (internal/bench). Each starts its child here and reads it through
// internal/observe.
//
// What survives a crash: the child's log file, appended to; the services
// live in the harness's process and end with it.
package launch
