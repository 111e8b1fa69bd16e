// Package silvertest holds what the silver and sessions tests share: a
// deterministic bronze scenario with resent and late events whose expected
// silver rows and editor sessions are computed from the scenario itself, a
// helper that commits it to bronze as the bronze query would, and the
// rounds of a query's kill test (KillOnce, on internal/crashtest). It is
// imported by tests only.
package silvertest
