// Package silvertest holds what the silver and sessions tests share: a
// deterministic bronze scenario with resent and late events whose expected
// silver rows and editor sessions are computed from the scenario itself, a
// helper that commits it to bronze as the bronze query would, and a child
// process runner for kill tests. It is imported by tests only.
package silvertest
