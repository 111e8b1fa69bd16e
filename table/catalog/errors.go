package catalog

import "errors"

// ErrInvalidCommit means a commit's updates (or a new table's schema, spec
// or sort order) cannot be applied to the table's metadata: the request is
// wrong, and nothing was written. A moved pointer or a failed requirement
// is table.ErrCommitFailed instead.
var ErrInvalidCommit = errors.New("invalid table update")

// ErrLocation means a table location, a namespace "location", or a file a
// table's metadata names, that the catalog refuses: a location naming
// another warehouse root than the catalog's, or one Options.Guard refuses.
// Nothing was written.
var ErrLocation = errors.New("location refused")

// ErrReserved is wrapped with ErrLocation for a location inside
// directories whose tables belong to another owner (the appliance's own
// namespaces').
var ErrReserved = errors.New("location reserved")

// ErrLimit means a table's or namespace's properties over the bounds
// Options.Guard sets. Nothing was written.
var ErrLimit = errors.New("over a limit")
