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
// clients' own. Where their files may go is the catalog's to check
// (table/catalog's Options.Guard): a location it refuses is 400
// BadRequestException, one inside another owner's directories 403, with
// nothing written. A drop with purgeRequested=true drops the entry and
// deletes the files the catalog allows (a file it keeps is logged; the
// drop stands).
//
// Every answer is one the spec allows its operation: an error status an
// operation may not answer is sent as 400 with the same exception type
// (route.extra), a 406 carries the bare error model. POST /v1/oauth/tokens
// (deprecated in the spec) issues no tokens: it answers the spec's
// OAuthError (400 unsupported_grant_type or invalid_request). Requests are
// bounded (bounds.go): names must be directory names of at most 255 bytes
// (a namespace's levels joined by "." at most 252), bodies at most 1 MiB
// (8 MiB for a table create or commit), four requests with a body at
// once; past a bound, 400 naming it.
//
// What survives a crash: whatever the catalog's calls made durable before
// they returned; the server keeps no state of its own.
package restcatalog
