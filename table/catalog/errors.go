package catalog

import "errors"

// ErrInvalidCommit means a commit's updates (or a new table's schema, spec
// or sort order) cannot be applied to the table's metadata: the request is
// wrong, and nothing was written. A moved pointer or a failed requirement
// is table.ErrCommitFailed instead.
var ErrInvalidCommit = errors.New("invalid table update")
