package appliance

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
	RoleAll    = "all"
	RoleIngest = "ingest"
	RoleStream = "stream"
	RoleMarts  = "marts"
)

// Roles are the roles Config.Role may name.
var Roles = []string{RoleAll, RoleIngest, RoleStream, RoleMarts}

// Runs reports whether the process's role includes component role.
func (c *Config) Runs(role string) bool {
	return c.Role == "" || c.Role == RoleAll || c.Role == role
}

// NeedsLake reports whether the role reads or writes the tables.
func (c *Config) NeedsLake() bool { return c.Runs(RoleStream) || c.Runs(RoleMarts) }

// RoleName is the role for messages.
func (c *Config) RoleName() string {
	if c.Role == "" {
		return RoleAll
	}
	return c.Role
}
