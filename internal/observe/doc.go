// Package observe holds the appliance's picture of itself as other
// processes read it: the Observation behind GET /api/status (the dashboard,
// `lakehouse status`, the history benchmark), and its brief projection,
// Status, behind GET /status (the kill test's and the soak's pollers, which
// ask often and want only the broker's counts and the queries' lags). Both
// are one model: the appliance gathers an Observation, and /status is that
// Observation's Status. The package also holds the clients that read them
// and the line a child prints to say where it listens.
//
// It may import only what the verifier may (broker, table), so verify and
// internal/bench read the same types the appliance writes.
//
// What survives a crash: nothing; every figure is gathered on demand from
// the components, or counted since the process started.
package observe
