package restcatalog

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

type namespaceBody struct {
	Namespace  []string           `json:"namespace"`
	Properties iceberg.Properties `json:"properties"`
}

// listNamespaces answers GET .../namespaces[?parent=a%1Fb]: the namespaces
// one level below parent (the top level without one), including levels
// that exist only as the prefix of a deeper namespace, as the spec has it.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) {
	var parent icetable.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		var err error
		if parent, err = parseNamespace(p); err != nil {
			s.writeError(w, r, err)
			return
		}
		if ok, err := s.cat.CheckNamespaceExists(r.Context(), parent); err != nil {
			s.writeError(w, r, err)
			return
		} else if !ok {
			s.writeError(w, r, fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, strings.Join(parent, ".")))
			return
		}
	}
	all, err := s.cat.ListNamespaces(r.Context(), parent)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := [][]string{}
	for _, ns := range all {
		if len(ns) <= len(parent) || !slices.Equal(ns[:len(parent)], parent) {
			continue
		}
		child := slices.Clone(ns[:len(parent)+1])
		if !slices.ContainsFunc(out, func(o []string) bool { return slices.Equal(o, child) }) {
			out = append(out, child)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": out})
}

// createNamespace answers POST .../namespaces.
func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) {
	var req namespaceBody
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkNamespace(req.Namespace); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.readOnly("create namespace", req.Namespace); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Properties == nil {
		req.Properties = iceberg.Properties{}
	}
	if err := s.cat.CreateNamespace(r.Context(), req.Namespace, req.Properties); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// loadNamespace answers GET .../namespaces/{namespace}.
func (s *Server) loadNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	props, err := s.cat.LoadNamespaceProperties(r.Context(), ns)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if props == nil {
		props = iceberg.Properties{}
	}
	writeJSON(w, http.StatusOK, namespaceBody{Namespace: ns, Properties: props})
}

// namespaceExists answers HEAD .../namespaces/{namespace}: 204 or 404.
func (s *Server) namespaceExists(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ok, err := s.cat.CheckNamespaceExists(r.Context(), ns)
	s.writeExists(w, r, ok, err)
}

// dropNamespace answers DELETE .../namespaces/{namespace}: 204; 404 when
// missing, 409 when it holds tables.
func (s *Server) dropNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceOf(r)
	if err == nil {
		err = s.readOnly("drop namespace", ns)
	}
	if err == nil {
		err = s.cat.DropNamespace(r.Context(), ns)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// updateNamespace answers POST .../namespaces/{namespace}/properties.
func (s *Server) updateNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceOf(r)
	if err == nil {
		err = s.readOnly("update namespace", ns)
	}
	var req struct {
		Removals []string           `json:"removals"`
		Updates  iceberg.Properties `json:"updates"`
	}
	if err == nil {
		err = decode(r, &req)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sum, err := s.cat.UpdateNamespaceProperties(r.Context(), ns, req.Removals, req.Updates)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	nonNil := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	writeJSON(w, http.StatusOK, map[string][]string{
		"updated": nonNil(sum.Updated), "removed": nonNil(sum.Removed), "missing": nonNil(sum.Missing),
	})
}
