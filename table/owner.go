package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// ErrWarehouseOwned means the warehouse belongs to another data directory:
// two catalogs committing to the same tables would corrupt each other (a
// copy of a data directory whose warehouse is not inside it shares that
// warehouse with the original).
var ErrWarehouseOwned = errors.New("warehouse belongs to another data directory")

// ownerFile is the object, at the root of a warehouse that is not inside
// its data directory (S3, or a local --warehouse elsewhere), that names the
// data directory whose catalog commits to it.
const ownerFile = ".lakehouse-owner"

// owner is the content of ownerFile.
type owner struct {
	DataDir string    `json:"data_dir"`
	Host    string    `json:"host"`
	Since   time.Time `json:"since"`
}

func (o owner) String() string {
	return fmt.Sprintf("%s on %s (since %s)", o.DataDir, o.Host, o.Since.Format(time.RFC3339))
}

// claimWarehouse makes sure the lake opened on dir may write to the
// warehouse wh: a warehouse inside dir is its own (a copy of dir has its
// own copy, see rootedFS); any other must be unowned (it is claimed),
// owned by dir on this host, or taken over (Config.TakeOverWarehouse, for
// a data directory moved to another path or machine).
func claimWarehouse(ctx context.Context, dir, wh string, props iceberg.Properties, takeOver bool) error {
	if !strings.Contains(wh, "://") && under(filepath.Clean(wh), dir) {
		return nil
	}
	host, _ := os.Hostname()
	me := owner{DataDir: dir, Host: host, Since: time.Now().UTC()}
	loc := strings.TrimSuffix(wh, "/") + "/" + ownerFile
	fsys, err := iceio.LoadFS(ctx, props, loc)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrWarehouse, wh, err)
	}
	cur, found, err := readOwner(fsys, loc)
	if err != nil {
		return fmt.Errorf("%w: read %s: %w", ErrWarehouse, loc, err)
	}
	if found && cur.DataDir == me.DataDir && cur.Host == me.Host {
		return nil
	}
	if found && !takeOver {
		return fmt.Errorf("%w: %s belongs to the data directory %s, not %s on %s; a copy of a data directory must not share its warehouse (give it its own --warehouse); if that directory was moved here, take the warehouse over with --take-over-warehouse",
			ErrWarehouseOwned, wh, cur, dir, host)
	}
	raw, err := json.Marshal(me)
	if err != nil {
		return err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("%w: %s: file IO %T cannot write", ErrWarehouse, wh, fsys)
	}
	if err := wfs.WriteFile(loc, raw); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrWarehouse, loc, err)
	}
	return nil
}

func readOwner(fsys iceio.IO, loc string) (owner, bool, error) {
	f, err := fsys.Open(loc)
	if errors.Is(err, fs.ErrNotExist) {
		return owner{}, false, nil
	}
	if err != nil {
		return owner{}, false, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return owner{}, false, err
	}
	var o owner
	if err := json.Unmarshal(raw, &o); err != nil || o.DataDir == "" {
		return owner{}, false, fmt.Errorf("%s is not an owner record (%d bytes): move it away if nothing else uses this warehouse", loc, len(raw))
	}
	return o, true, nil
}
