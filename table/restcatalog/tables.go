package restcatalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table/catalog"
)

// identifier is the spec's TableIdentifier.
type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (id identifier) ident() (icetable.Identifier, error) {
	out := append(slices.Clone(id.Namespace), id.Name)
	if err := checkIdent(out); err != nil {
		return nil, err
	}
	return out, nil
}

// loadResult is the spec's LoadTableResult (also the answer to a create).
type loadResult struct {
	MetadataLocation string            `json:"metadata-location,omitempty"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

// listTables answers GET .../namespaces/{namespace}/tables.
func (s *Server) listTables(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ok, err := s.cat.CheckNamespaceExists(r.Context(), ns); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, strings.Join(ns, "."))
		}
		s.writeError(w, r, err)
		return
	}
	out := []identifier{}
	for id, err := range s.cat.ListTables(r.Context(), ns) {
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out = append(out, identifier{Namespace: icecat.NamespaceFromIdent(id), Name: icecat.TableNameFromIdent(id)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"identifiers": out})
}

// createTable answers POST .../namespaces/{namespace}/tables; with
// "stage-create" it returns the metadata without creating anything.
func (s *Server) createTable(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceOf(r)
	if err == nil {
		err = s.readOnly("create table in", ns)
	}
	var req struct {
		Name          string                 `json:"name"`
		Location      string                 `json:"location"`
		Schema        *iceberg.Schema        `json:"schema"`
		PartitionSpec *iceberg.PartitionSpec `json:"partition-spec"`
		WriteOrder    *icetable.SortOrder    `json:"write-order"`
		StageCreate   bool                   `json:"stage-create"`
		Properties    iceberg.Properties     `json:"properties"`
	}
	if err == nil {
		err = decode(r, &req)
	}
	if err == nil && (req.Name == "" || req.Schema == nil) {
		err = fmt.Errorf("%w: create table: want a name and a schema", ErrBadRequest)
	}
	if err == nil {
		err = checkIdent(append(slices.Clone(ns), req.Name))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ident := append(slices.Clone(ns), req.Name)
	var opts []icecat.CreateTableOpt
	if req.Location != "" {
		opts = append(opts, icecat.WithLocation(req.Location))
	}
	if req.PartitionSpec != nil {
		opts = append(opts, icecat.WithPartitionSpec(req.PartitionSpec))
	}
	if req.WriteOrder != nil {
		opts = append(opts, icecat.WithSortOrder(*req.WriteOrder))
	}
	if req.Properties != nil {
		opts = append(opts, icecat.WithProperties(req.Properties))
	}
	if req.StageCreate {
		st, ok := s.cat.(Stager)
		if !ok {
			s.writeError(w, r, fmt.Errorf("%w: this catalog cannot stage a create", ErrUnsupported))
			return
		}
		meta, err := st.StageTable(r.Context(), ident, req.Schema, opts...)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeTable(w, r, meta, "")
		return
	}
	tbl, err := s.cat.CreateTable(r.Context(), ident, req.Schema, opts...)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTable(w, r, tbl.Metadata(), tbl.MetadataLocation())
}

// loadTable answers GET .../tables/{table}, with an ETag naming the
// metadata file (immutable once written) and 304 when If-None-Match
// names it already.
func (s *Server) loadTable(w http.ResponseWriter, r *http.Request) {
	ident, err := identOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tbl, err := s.cat.LoadTable(r.Context(), ident)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tag := etag(tbl.MetadataLocation())
	w.Header().Set("ETag", tag)
	if matches(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.writeTable(w, r, tbl.Metadata(), tbl.MetadataLocation())
}

// etag is a strong validator of a metadata location.
func etag(loc string) string {
	sum := sha256.Sum256([]byte(loc))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// matches reports whether an If-None-Match header names tag (or is "*").
func matches(header, tag string) bool {
	for c := range strings.SplitSeq(header, ",") {
		c = strings.TrimPrefix(strings.TrimSpace(c), "W/")
		if c == "*" || c == tag {
			return true
		}
	}
	return false
}

func (s *Server) writeTable(w http.ResponseWriter, r *http.Request, meta icetable.Metadata, loc string) {
	var raw []byte
	var err error
	if m, ok := meta.(json.Marshaler); ok {
		raw, err = m.MarshalJSON()
	} else {
		raw, err = json.Marshal(meta)
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("encode table metadata: %w", err))
		return
	}
	cfg := map[string]string{}
	for k, v := range s.opts.Config {
		cfg[k] = v
	}
	writeJSON(w, http.StatusOK, loadResult{MetadataLocation: loc, Metadata: raw, Config: cfg})
}

// tableExists answers HEAD .../tables/{table}: 204 or 404.
func (s *Server) tableExists(w http.ResponseWriter, r *http.Request) {
	ident, err := identOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ok, err := s.cat.CheckTableExists(r.Context(), ident)
	s.writeExists(w, r, ok, err)
}

// commitTable answers POST .../tables/{table}: the requirements are checked
// against the current metadata and the updates applied in the catalog's
// compare-and-swap. A failed requirement or a lost race is 409 and changes
// nothing. A table that does not exist is created only by a commit that
// asserts it does not (assert-create: the second half of a staged create).
func (s *Server) commitTable(w http.ResponseWriter, r *http.Request) {
	ident, err := identOf(r)
	if err == nil {
		err = s.readOnly("commit to", icecat.NamespaceFromIdent(ident))
	}
	var req struct {
		Identifier   *identifier           `json:"identifier"`
		Requirements icetable.Requirements `json:"requirements"`
		Updates      icetable.Updates      `json:"updates"`
	}
	if err == nil {
		err = decode(r, &req)
	}
	if err == nil && req.Identifier != nil {
		var id icetable.Identifier
		if id, err = req.Identifier.ident(); err == nil && !slices.Equal(id, ident) {
			err = fmt.Errorf("%w: the body names %s, the path %s", ErrBadRequest, strings.Join(id, "."), strings.Join(ident, "."))
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	creates := slices.ContainsFunc(req.Requirements, func(q icetable.Requirement) bool { return q.GetType() == "assert-create" })
	if !creates {
		if ok, err := s.cat.CheckTableExists(r.Context(), ident); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("%w: %s", icecat.ErrNoSuchTable, strings.Join(ident, "."))
			}
			s.writeError(w, r, err)
			return
		}
	}
	meta, loc, err := s.cat.CommitTable(r.Context(), ident, req.Requirements, req.Updates)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTable(w, r, meta, loc)
}

// dropTable answers DELETE .../tables/{table}: the entry goes, the files
// stay; with purgeRequested=true the catalog also deletes the files it
// allows (table/catalog: those of a client table, inside its own
// directories), and a file it keeps is logged, not an error: the drop
// stands.
func (s *Server) dropTable(w http.ResponseWriter, r *http.Request) {
	ident, err := identOf(r)
	if err == nil {
		err = s.readOnly("drop table in", icecat.NamespaceFromIdent(ident))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if r.URL.Query().Get("purgeRequested") == "true" {
		p, ok := s.cat.(icecat.PurgeableTable)
		if !ok {
			s.writeError(w, r, fmt.Errorf("%w: purge: this catalog drops the entry and leaves the files; drop without purgeRequested", ErrUnsupported))
			return
		}
		err = p.PurgeTable(r.Context(), ident)
		if errors.Is(err, catalog.ErrPurgeIncomplete) {
			s.opts.Logger.Warn("iceberg REST: purge kept some files", "table", strings.Join(ident, "."), "err", err)
			err = nil
		}
	} else {
		err = s.cat.DropTable(r.Context(), ident)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// renameTable answers POST .../tables/rename.
func (s *Server) renameTable(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Source      *identifier `json:"source"`
		Destination *identifier `json:"destination"`
	}
	err := decode(r, &req)
	if err == nil && (req.Source == nil || req.Destination == nil) {
		err = fmt.Errorf("%w: rename: want a source and a destination", ErrBadRequest)
	}
	var from, to icetable.Identifier
	if err == nil {
		from, err = req.Source.ident()
	}
	if err == nil {
		to, err = req.Destination.ident()
	}
	if err == nil {
		err = errors.Join(s.readOnly("rename a table in", icecat.NamespaceFromIdent(from)),
			s.readOnly("rename a table into", icecat.NamespaceFromIdent(to)))
	}
	if err == nil {
		_, err = s.cat.RenameTable(r.Context(), from, to)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
