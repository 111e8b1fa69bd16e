package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrOlderFormat: a table was created by an older version and EnsureTables
// (which `lakehouse run` calls at start) has not upgraded it yet; a
// read-only lake cannot upgrade it.
var ErrOlderFormat = errors.New("written by an older version")

// PendingUpgrades returns ErrOlderFormat naming each table whose schema
// EnsureTables would change (a renamed column), or nil when every table it
// can load is current. A table that does not exist yet is not an upgrade,
// and one that does not load is left to the read that follows (its error
// names the damaged file and the way out).
func (l *Lake) PendingUpgrades(ctx context.Context) error {
	var pending []string
	for _, name := range Tables {
		id, err := parseIdent(name)
		if err != nil {
			return err
		}
		tbl, err := l.cat.LoadTable(ctx, id)
		if err != nil {
			continue
		}
		if r := columnRenames(tbl.Schema(), defs[name].schema); len(r) > 0 {
			var s []string
			for _, x := range r {
				s = append(s, x.String())
			}
			pending = append(pending, fmt.Sprintf("%s: columns %s", name, strings.Join(s, ", ")))
		}
	}
	if len(pending) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%s)", ErrOlderFormat, strings.Join(pending, "; "))
}
