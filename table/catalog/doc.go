// Package catalog is an embedded Iceberg catalog kept in one bbolt file
// (catalog.db). It implements github.com/apache/iceberg-go/catalog.Catalog
// for namespaces and tables (not views or functions).
//
// A table entry is a pointer from "namespace.name" to the location of its
// current metadata file. A commit validates the requirements against the
// current metadata, writes the new metadata file (the FileIO makes it
// durable; Options.BeforeSwap then makes new directory entries durable), and
// compares-and-swaps the pointer in one fsynced bbolt transaction. A writer
// whose expected pointer has moved, or whose requirement fails, gets
// table.ErrCommitFailed and nothing changes. Parsed metadata is cached by
// file location (metadata files are immutable); the pointer is always read
// from bbolt.
//
// What survives a crash: every pointer swap that returned. A crash between
// writing a metadata file and swapping the pointer leaves an unreferenced
// metadata file and the old pointer, which is still valid; nothing is locked
// or claimed, so the next commit proceeds immediately. bbolt transactions that
// had not finished committing are rolled back.
//
// What a damaged catalog.db gets: an error naming the file and the way out,
// never a panic, a fault or a new database. Open refuses an empty or
// truncated file, or one whose meta, root or freelist pages are damaged
// (internal/boltfile: a few pages, whatever the file's size); a damaged
// page deeper in the file is found by the first transaction that reads it
// (every transaction runs under boltfile.Guard), which is rolled back.
// CheckFile reads every page (`verify` runs it).
//
// One warehouse root: the catalog infers the root its tables were created
// under from their default locations (Root), and refuses a create, commit
// or rename that would put a table at a default location under another
// root (ErrLocation). At Open the namespaces Options.Owned claims decide
// the root; a table of another namespace under a second root is a Stray
// (Strays lists them), not a reason to refuse opening. Options.Guard checks
// every location a table's metadata or a namespace's "location" sets before
// anything is written (ErrLocation, ErrReserved), and which files
// PurgeTable may delete; PurgeTable drops the entry first, so a crash in
// between leaves files no table references.
//
// Several Catalog values may be opened on the same file in one process: they
// share one bbolt handle, so their compare-and-swaps are serialised. A second
// process waits up to Options.LockTimeout for bbolt's file lock.
package catalog
