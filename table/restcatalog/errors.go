package restcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table/catalog"
)

// Errors the server raises itself (the catalog's own are mapped by
// statusOf).
var (
	// ErrReadOnly: a change to a namespace Options.ReadOnly protects.
	ErrReadOnly = errors.New("read-only through the REST catalog")
	// ErrBadRequest: a request the spec does not allow (malformed JSON, a
	// missing field, a namespace or identifier that does not parse).
	ErrBadRequest = errors.New("bad request")
	// ErrUnsupported: a request the server understands but does not do.
	ErrUnsupported = errors.New("unsupported operation")
	// errNoRoute: no such endpoint.
	errNoRoute = errors.New("no such endpoint")
)

// errorModel is the spec's ErrorModel, sent as {"error": {...}}.
type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// statusOf maps an error to the spec's status code and exception type.
// Anything unrecognised is 500: for a commit that means the outcome is
// unknown to the client (a write may have happened), which is what a 5xx
// says in the spec.
func statusOf(err error) (int, string) {
	switch {
	case errors.Is(err, ErrReadOnly), errors.Is(err, catalog.ErrReserved):
		return http.StatusForbidden, "ForbiddenException"
	case errors.Is(err, catalog.ErrLocation), errors.Is(err, catalog.ErrLimit):
		return http.StatusBadRequest, "BadRequestException"
	case errors.Is(err, ErrBadRequest), errors.Is(err, icecat.ErrInvalidIdentifier):
		return http.StatusBadRequest, "BadRequestException"
	case errors.Is(err, ErrUnsupported):
		return http.StatusNotAcceptable, "UnsupportedOperationException"
	case errors.Is(err, errNoRoute):
		return http.StatusNotFound, "NotFoundException"
	case errors.Is(err, icecat.ErrNoSuchTable):
		return http.StatusNotFound, "NoSuchTableException"
	case errors.Is(err, icecat.ErrNoSuchNamespace):
		return http.StatusNotFound, "NoSuchNamespaceException"
	case errors.Is(err, icecat.ErrTableAlreadyExists), errors.Is(err, icecat.ErrNamespaceAlreadyExists):
		return http.StatusConflict, "AlreadyExistsException"
	case errors.Is(err, icecat.ErrNamespaceNotEmpty):
		return http.StatusConflict, "NamespaceNotEmptyException"
	case errors.Is(err, icetable.ErrCommitFailed):
		return http.StatusConflict, "CommitFailedException"
	case errors.Is(err, catalog.ErrInvalidCommit):
		return http.StatusBadRequest, "BadRequestException"
	case errors.Is(err, iceberg.ErrInvalidArgument):
		return http.StatusUnprocessableEntity, "UnprocessableEntityException"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "ServiceUnavailableException"
	}
	return http.StatusInternalServerError, "InternalServerError"
}

// writeError sends err as the spec's error object, with a status the spec
// allows the request's operation: one it does not (a 409, 406 or 422 the
// operation cannot answer) is sent as 400 with the same type. The spec's
// 406 body is the bare error model, every other one wrapped in "error".
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, typ := statusOf(err)
	if code >= 500 {
		s.opts.Logger.Error("iceberg REST: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if extra, ok := s.extra[r.Pattern]; ok && !commonStatus(code) && !slices.Contains(extra, code) {
		code = http.StatusBadRequest
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(code)
		return
	}
	if code == http.StatusNotAcceptable {
		writeJSON(w, code, errorModel{Message: err.Error(), Type: typ, Code: code})
		return
	}
	WriteError(w, code, typ, err.Error())
}

// commonStatus reports whether the spec allows code for every catalog
// operation.
func commonStatus(code int) bool {
	switch code {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, 419, http.StatusServiceUnavailable:
		return true
	}
	return code >= 500
}

// WriteError sends the spec's error object {"error": {"message", "type",
// "code"}} with status code: for a handler in front of the Server (the
// appliance's bearer-token check) that must answer as the spec does.
func WriteError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, struct {
		Error errorModel `json:"error"`
	}{errorModel{Message: msg, Type: typ, Code: code}})
}

// writeExists answers a HEAD exists request: 204, 404, or err's status.
func (s *Server) writeExists(w http.ResponseWriter, r *http.Request, ok bool, err error) {
	switch {
	case err != nil:
		s.writeError(w, r, err)
	case !ok:
		w.WriteHeader(http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encode response","type":"InternalServerError","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
