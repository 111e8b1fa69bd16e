package restcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// DefaultPrefix is the path prefix the server advertises in /v1/config
// when Options.Prefix is empty: every route but the config is under
// /v1/<prefix>/.
const DefaultPrefix = "lakehouse"

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
	cat     icecat.Catalog
	opts    Options
	mux     *http.ServeMux
	writers chan struct{}    // requests with a body being served (maxWriters)
	extra   map[string][]int // a route's pattern -> route.extra
}

// New returns a Server for cat.
func New(cat icecat.Catalog, opts Options) *Server {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{cat: cat, opts: opts, mux: http.NewServeMux(), writers: make(chan struct{}, maxWriters)}
	s.routes()
	return s
}

// route is one served endpoint: its method and path as the spec names it
// (advertised in /v1/config), its handler, and the error statuses the spec
// allows it beyond those it allows every catalog operation (400, 401, 403,
// 404, 419, 503, 5XX): writeError answers 400 instead of any other.
type route struct {
	method, path string
	h            http.HandlerFunc
	extra        []int
}

func (s *Server) table() []route {
	const (
		notAcceptable = http.StatusNotAcceptable
		conflict      = http.StatusConflict
		unprocessable = http.StatusUnprocessableEntity
	)
	return []route{
		{http.MethodGet, "/v1/{prefix}/namespaces", s.listNamespaces, nil},
		{http.MethodPost, "/v1/{prefix}/namespaces", s.createNamespace, []int{notAcceptable, conflict}},
		{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}", s.loadNamespace, nil},
		{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}", s.namespaceExists, nil},
		{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}", s.dropNamespace, []int{conflict}},
		{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/properties", s.updateNamespace, []int{notAcceptable, unprocessable}},
		{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables", s.listTables, nil},
		{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables", s.createTable, []int{conflict}},
		{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.loadTable, nil},
		{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.tableExists, nil},
		{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.commitTable, []int{conflict}},
		{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", s.dropTable, nil},
		{http.MethodPost, "/v1/{prefix}/tables/rename", s.renameTable, []int{notAcceptable, conflict}},
	}
}

func (s *Server) routes() {
	s.extra = map[string][]int{}
	s.mux.HandleFunc("GET /v1/config", s.config)
	s.mux.HandleFunc("POST /v1/oauth/tokens", s.oauthTokens)
	for _, rt := range s.table() {
		// GET patterns also match HEAD in ServeMux; the HEAD routes are
		// registered on their own, which takes precedence.
		pattern := rt.method + " " + strings.Replace(rt.path, "{prefix}", s.opts.Prefix, 1)
		s.mux.HandleFunc(pattern, rt.h)
		s.extra[pattern] = rt.extra
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fmt.Errorf("%w: %s %s", errNoRoute, r.Method, r.URL.Path))
	})
}

// ServeHTTP serves one request. A request with a body waits its turn
// (maxWriters at once) and its body is bounded (bodyLimit).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		select {
		case s.writers <- struct{}{}:
			defer func() { <-s.writers }()
		case <-r.Context().Done():
			s.writeError(w, r, r.Context().Err())
			return
		}
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, bodyLimit(r))
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
	if len(s) > MaxNamespace {
		return nil, fmt.Errorf("%w: namespace of %d bytes: at most %d, as <namespace>.db is a directory name", ErrBadRequest, len(s), MaxNamespace)
	}
	ns := strings.Split(s, nsSep)
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// identOf parses the {namespace} and {table} path segments.
func identOf(r *http.Request) (icetable.Identifier, error) {
	ns, err := namespaceOf(r)
	if err != nil {
		return nil, err
	}
	id := append(ns, r.PathValue("table"))
	if err := checkIdent(id); err != nil {
		return nil, err
	}
	return id, nil
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
		if tl := tooLarge(err); tl != err {
			return tl
		}
		return fmt.Errorf("%w: read body: %w", ErrBadRequest, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return nil
}
