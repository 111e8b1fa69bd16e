package restcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// DefaultPrefix is the path prefix the server advertises in /v1/config
// when Options.Prefix is empty: every route but the config is under
// /v1/<prefix>/.
const DefaultPrefix = "lakehouse"

// maxBody bounds a request body (a commit of many snapshots is a few
// hundred KB).
const maxBody = 16 << 20

// nsSep joins namespace levels in a path segment and in ?parent= (the
// spec's default separator, 0x1F, sent percent-encoded).
const nsSep = "\x1f"

// Options configure a Server.
type Options struct {
	// Prefix is the route prefix (DefaultPrefix when empty).
	Prefix string
	// ReadOnly reports whether the tables of a namespace may be read but
	// not changed through REST (nil: every namespace may be changed). It is
	// asked with the namespace's first level as well as deeper ones, so a
	// namespace below a protected one is protected too.
	ReadOnly func(ns icetable.Identifier) bool
	// Reserved reports whether a client may not create a table at an
	// explicit location (the read-only namespaces' directories: a client
	// table there would mix its files with the appliance's); nil: none.
	Reserved func(location string) bool
	// Config is the table config sent with every loaded table (file IO
	// settings a client needs to read the files, never credentials).
	Config map[string]string
	// Logger receives requests that failed with a server error
	// (slog.Default() when nil).
	Logger *slog.Logger
}

// Stager is the optional catalog method behind a staged create
// (stage-create): the metadata CreateTable would write, with nothing
// written. table/catalog's Catalog has it.
type Stager interface {
	StageTable(ctx context.Context, ident icetable.Identifier, sc *iceberg.Schema, opts ...icecat.CreateTableOpt) (icetable.Metadata, error)
}

// Server is an http.Handler serving cat over the Iceberg REST protocol.
// Mount it so that its routes start at /v1 (http.StripPrefix for a
// sub-path).
type Server struct {
	cat  icecat.Catalog
	opts Options
	mux  *http.ServeMux
}

// New returns a Server for cat.
func New(cat icecat.Catalog, opts Options) *Server {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{cat: cat, opts: opts, mux: http.NewServeMux()}
	s.routes()
	return s
}

// route is one served endpoint: its method and path as the spec names it
// (advertised in /v1/config) and its handler.
type route struct {
	method, path string
	h            http.HandlerFunc
}

func (s *Server) table() []route {
	return []route{
		{http.MethodGet, "/v1/{prefix}/namespaces", s.listNamespaces},
		{http.MethodPost, "/v1/{prefix}/namespaces", s.createNamespace},
		{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}", s.loadNamespace},
		{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}", s.namespaceExists},
		{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}", s.dropNamespace},
		{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/properties", s.updateNamespace},
		{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables", s.listTables},
		{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables", s.createTable},
		{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.loadTable},
		{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.tableExists},
		{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.commitTable},
		{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.dropTable},
		{http.MethodPost, "/v1/{prefix}/tables/rename", s.renameTable},
	}
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /v1/config", s.config)
	for _, rt := range s.table() {
		// GET patterns also match HEAD in ServeMux; the HEAD routes are
		// registered on their own, which takes precedence.
		pattern := rt.method + " " + strings.Replace(rt.path, "{prefix}", s.opts.Prefix, 1)
		s.mux.HandleFunc(pattern, rt.h)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fmt.Errorf("%w: %s %s", errNoRoute, r.Method, r.URL.Path))
	})
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	s.mux.ServeHTTP(w, r)
}

// config answers GET /v1/config: no defaults, the prefix as an override,
// and the endpoints served (a client that sees a non-empty list uses only
// those).
func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	var eps []string
	for _, rt := range s.table() {
		eps = append(eps, rt.method+" "+rt.path)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"defaults":  map[string]string{},
		"overrides": map[string]string{"prefix": s.opts.Prefix},
		"endpoints": eps,
	})
}

// namespaceOf parses the {namespace} path segment (levels joined by 0x1F).
func namespaceOf(r *http.Request) (icetable.Identifier, error) {
	return parseNamespace(r.PathValue("namespace"))
}

func parseNamespace(s string) (icetable.Identifier, error) {
	ns := strings.Split(s, nsSep)
	if slices.Contains(ns, "") {
		return nil, fmt.Errorf("%w: namespace %q has an empty level", ErrBadRequest, s)
	}
	return ns, nil
}

// identOf parses the {namespace} and {table} path segments.
func identOf(r *http.Request) (icetable.Identifier, error) {
	ns, err := namespaceOf(r)
	if err != nil {
		return nil, err
	}
	name := r.PathValue("table")
	if name == "" {
		return nil, fmt.Errorf("%w: empty table name", ErrBadRequest)
	}
	return append(ns, name), nil
}

// readOnly refuses a change under a protected namespace.
func (s *Server) readOnly(what string, ns icetable.Identifier) error {
	if s.opts.ReadOnly == nil || len(ns) == 0 {
		return nil
	}
	for i := 1; i <= len(ns); i++ {
		if s.opts.ReadOnly(ns[:i]) {
			return fmt.Errorf("%w: %s %s: namespace %s belongs to the appliance, its only writer; REST clients may read its tables, not change them",
				ErrReadOnly, what, strings.Join(ns, "."), strings.Join(ns[:i], "."))
		}
	}
	return nil
}

// decode reads a JSON request body into v.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("%w: read body: %w", ErrBadRequest, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return nil
}
