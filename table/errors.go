package table

import (
	"errors"

	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrCommitFailed is iceberg-go's table.ErrCommitFailed: a catalog
	// compare-and-swap lost a race and nothing was committed. CommitBatch
	// handles it itself (reload, re-check the marker, retry) and only returns
	// it when Config.CommitRetries are used up.
	ErrCommitFailed = icetable.ErrCommitFailed

	// ErrNoSuchTable is iceberg-go's catalog.ErrNoSuchTable: the identifier
	// names no table (call EnsureTables first).
	ErrNoSuchTable = icecat.ErrNoSuchTable

	// ErrUnknownTable means the identifier is not "namespace.name" or, where
	// a project table is required, not one of the project's tables.
	ErrUnknownTable = errors.New("unknown table identifier")

	// ErrSchemaMismatch means an Arrow record does not match the table's
	// schema (column names, order, types, or nulls in a required column).
	// Nothing was written.
	ErrSchemaMismatch = errors.New("record schema does not match table schema")

	// ErrWarehouse means the warehouse could not be reached or written
	// when the Lake was opened.
	ErrWarehouse = errors.New("warehouse unavailable")

	// ErrSnapshotNotFound means a snapshot id given to a read or to expiry
	// is not (or no longer) in the table's history.
	ErrSnapshotNotFound = errors.New("snapshot not found")

	// ErrUnsafeAge means DeleteOrphanFiles was asked to delete files younger
	// than Config.MinOrphanAge, which could include files of a commit still
	// in flight.
	ErrUnsafeAge = errors.New("orphan file age below the safe minimum")

	// ErrLostWrite means a Parquet write or rewrite produced fewer rows than
	// it was given without reporting an error; nothing was committed.
	// iceberg-go v0.7.0's partitioned writer can drop a failed partition
	// writer's error (the writer removes itself from the factory before
	// closeAll collects errors), so every write and compaction is checked.
	// The error it dropped is a failed file write, so ErrLostWrite is
	// transient (package transient): a caller pauses and retries, as for
	// the write error itself.
	ErrLostWrite error = &transientError{"data file writer lost rows without an error"}

	// ErrInvalidBatch means a Batch lacks a query id or has a negative id.
	ErrInvalidBatch = errors.New("invalid batch")

	// ErrFenced means a fenced batch (Batch.Fenced) does not continue the
	// query's marker: another process committed the query's batches (this
	// one is a zombie, or two run at once). Nothing was committed, and
	// retrying cannot help.
	ErrFenced = errors.New("another writer committed this query's batches")

	// ErrBadProperty means a caller asked to set a table property that is
	// not one of ours ("lakehouse." prefix) or is a stream's marker.
	ErrBadProperty = errors.New("table property not settable")

	// ErrRepeatedFile means a scan plan named one data file twice (or
	// part of it): the error names the file. A reader refuses such a plan
	// rather than count the file's rows twice (see planFiles).
	ErrRepeatedFile = errors.New("scan plan names a data file twice")
)

// transientError is a sentinel error that package transient counts as
// transient.
type transientError struct{ msg string }

func (e *transientError) Error() string   { return e.msg }
func (e *transientError) Transient() bool { return true }
