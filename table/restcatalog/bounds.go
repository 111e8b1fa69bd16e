package restcatalog

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	icetable "github.com/apache/iceberg-go/table"
)

// Bounds on what a request may carry. The spec sets none; these follow
// from where things end up. A name becomes a directory name in the
// warehouse (<namespace levels joined by ".">.db/<table>), and a file
// system takes 255 bytes per name. A body is read whole before it is
// parsed: a commit of many snapshot updates is a few hundred KB, a
// namespace request a few KB. Past a bound the answer is 400
// BadRequestException naming the bound (the spec allows 400 for every
// catalog operation and 413 for none), with nothing changed.
const (
	// MaxTableName is the longest table name, in bytes.
	MaxTableName = 255
	// MaxNamespace is the longest namespace, its levels joined by ".", in
	// bytes (<namespace>.db is a directory name).
	MaxNamespace = 255 - len(".db")
	// maxSmallBody bounds the body of a namespace request and a rename.
	maxSmallBody = 1 << 20
	// maxTableBody bounds the body of a table create or commit.
	maxTableBody = 8 << 20
	// maxWriters bounds the requests with a body served at once (the
	// others wait, their bodies unread): with maxTableBody, what bodies
	// hold in memory.
	maxWriters = 4
)

// checkName refuses a namespace level or table name that cannot be a
// directory name: empty, "." or "..", a slash, a NUL or another control
// character, invalid UTF-8.
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s is empty", ErrBadRequest, what)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %s %q: . and .. are not names", ErrBadRequest, what, name)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %s %q: not UTF-8", ErrBadRequest, what, name)
	case strings.ContainsAny(name, "/\\"):
		return fmt.Errorf("%w: %s %q: a name holds no slash (it is a directory name in the warehouse)", ErrBadRequest, what, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %s %q: a name holds no control character", ErrBadRequest, what, name)
		}
	}
	return nil
}

// checkNamespace applies checkName to every level and bounds the whole.
func checkNamespace(ns []string) error {
	if len(ns) == 0 {
		return fmt.Errorf("%w: namespace: want one or more levels", ErrBadRequest)
	}
	for _, l := range ns {
		if err := checkName("namespace level", l); err != nil {
			return err
		}
	}
	if n := len(strings.Join(ns, ".")); n > MaxNamespace {
		return fmt.Errorf("%w: namespace of %d bytes (levels joined by \".\"): at most %d, as <namespace>.db is a directory name", ErrBadRequest, n, MaxNamespace)
	}
	return nil
}

// checkIdent checks a table identifier's namespace and name.
func checkIdent(id icetable.Identifier) error {
	if len(id) < 2 {
		return fmt.Errorf("%w: table identifier %q: want a namespace and a name", ErrBadRequest, id)
	}
	if err := checkNamespace(id[:len(id)-1]); err != nil {
		return err
	}
	name := id[len(id)-1]
	if err := checkName("table name", name); err != nil {
		return err
	}
	if len(name) > MaxTableName {
		return fmt.Errorf("%w: table name of %d bytes: at most %d, as it is a directory name", ErrBadRequest, len(name), MaxTableName)
	}
	return nil
}

// bodyLimit is the bound on a request's body.
func bodyLimit(r *http.Request) int64 {
	if strings.Contains(r.URL.Path, "/tables/") || strings.HasSuffix(r.URL.Path, "/tables") {
		if !strings.HasSuffix(r.URL.Path, "/tables/rename") {
			return maxTableBody
		}
	}
	return maxSmallBody
}

// tooLarge turns a body over its bound into the error naming it.
func tooLarge(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return fmt.Errorf("%w: request body over %d bytes", ErrBadRequest, mb.Limit)
	}
	return err
}
