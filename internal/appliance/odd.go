package appliance

import (
	"context"
	"fmt"
	"io"

	"lakehouse/table"
)

// OddTables drops the odd catalog entries named in drop (the entries only:
// their files stay), then writes the odd entries left (table.Lake.OddTables)
// to w. It opens the catalog read-only when drop is empty. It needs
// catalog.db's lock, so it fails while the appliance runs; a running
// appliance shows the same list on /readyz and in `status`.
func (c *Store) OddTables(ctx context.Context, warehouse string, drop []string, w io.Writer) error {
	cfg := c.ReadOnlyTableConfig(warehouse)
	if len(drop) > 0 {
		cfg = c.TableConfig(warehouse)
	}
	lake, err := table.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer lake.Close()
	for _, name := range drop {
		if err := lake.DropOdd(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(w, "dropped %s (its files stay where they are)\n", name)
	}
	odd, err := lake.OddTables(ctx)
	if err != nil {
		return err
	}
	if len(odd) == 0 {
		fmt.Fprintln(w, "no odd entries: the appliance accepts every table in the catalog")
		return nil
	}
	for _, o := range odd {
		fmt.Fprintf(w, "%s\t%s\n\tmetadata %s\n", o.Name, o.Reason, o.MetadataLocation)
	}
	fmt.Fprintln(w, "drop one with: lakehouse catalog --drop NAME (with the appliance stopped)")
	return nil
}
