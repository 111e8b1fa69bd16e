// Package restcatalog serves an Iceberg catalog over the Iceberg REST
// catalog protocol (the Apache Iceberg REST OpenAPI spec), so that other
// engines (Spark, Trino, PyIceberg, DuckDB's iceberg extension, iceberg-go's
// catalog/rest client) can list, load and scan the lake's tables without
// being pointed at a metadata.json by hand.
//
// It owns the protocol only: routing, request and response JSON, the
// spec's error objects and status codes, ETags. Every read and every write
// is one call of the catalog it serves (table/catalog's embedded catalog in
// the appliance), so a REST commit is the same compare-and-swap of the
// table's metadata pointer as an in-process commit: its requirements
// (assert-ref-snapshot-id, assert-table-uuid, ...) are checked against the
// current metadata, and a failed requirement or a lost race is 409
// CommitFailedException with nothing changed.
//
// Served: GET /v1/config (defaults, overrides with the prefix, and the
// endpoints below, which clients treat as the whole list); namespaces:
// list (one level below ?parent=, levels joined by 0x1F), create, load,
// exists (HEAD), drop, update properties; tables: list, create (also
// staged, "stage-create", when the catalog can stage), load (metadata,
// metadata-location, config; an ETag, and 304 for a matching
// If-None-Match), exists (HEAD), commit, drop, rename. Not served, and not
// advertised: multi-table transactions, register, views, scan planning,
// credential vending (X-Iceberg-Access-Delegation is accepted and no
// credentials are vended: a client reads the files with its own).
//
// Options.ReadOnly marks namespaces whose tables REST clients may read but
// not change: the appliance marks its own (bronze, silver, gold, ops),
// whose only writer is the appliance itself; any change there is 403
// ForbiddenException. Namespaces and tables of other names are the
// clients' own.
//
// What survives a crash: whatever the catalog's calls made durable before
// they returned; the server keeps no state of its own.
package restcatalog
