package table

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// ownNamespaces is the set of owned namespaces: those of Tables and extra.
func ownNamespaces(extra []string) map[string]bool {
	own := map[string]bool{}
	for _, id := range Tables {
		ns, _, _ := strings.Cut(id, ".")
		own[ns] = true
	}
	for _, ns := range extra {
		own[ns] = true
	}
	return own
}

// checkRoot compares the root the catalog's tables were created under with
// the warehouse the lake was opened with. A local lake whose data directory
// was copied or moved resolves the recorded root under its own warehouse
// (rootedFS); a lake cannot move between local disk and S3, or between S3
// locations, by a flag alone.
func checkRoot(recorded, wh string, rooted *rootedFS) error {
	if rooted == nil {
		if strings.TrimSuffix(recorded, "/") != wh {
			return fmt.Errorf("%w: catalog.db's tables are in %s, not in the warehouse %s: run with --warehouse %s", ErrOutsideWarehouse, recorded, wh, recorded)
		}
		return nil
	}
	if strings.Contains(recorded, "://") && !strings.HasPrefix(recorded, "file:") {
		return fmt.Errorf("%w: catalog.db's tables are in %s, not in the local warehouse %s: run with --warehouse %s", ErrOutsideWarehouse, recorded, wh, recorded)
	}
	p, err := localName(recorded)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%w: catalog.db records the relative warehouse %q", ErrOutsideWarehouse, recorded)
	}
	rooted.recorded = filepath.Clean(p)
	return nil
}

func warehouseProps(cfg Config) (string, iceberg.Properties, error) {
	wh := cfg.Warehouse
	props := iceberg.Properties{}
	switch {
	case wh == "":
		wh = filepath.Join(cfg.Dir, "warehouse")
	case strings.HasPrefix(wh, "file:"):
		p, err := localName(wh)
		if err != nil {
			return "", nil, fmt.Errorf("open lake: warehouse: %w", err)
		}
		wh = p
	case strings.HasPrefix(wh, "s3://"):
		wh = strings.TrimSuffix(wh, "/")
		if cfg.S3.Endpoint != "" {
			props[iceio.S3EndpointURL] = cfg.S3.Endpoint
		}
		if cfg.S3.Region != "" {
			props[iceio.S3Region] = cfg.S3.Region
		}
		if cfg.S3.AccessKeyID != "" {
			props[iceio.S3AccessKeyID] = cfg.S3.AccessKeyID
			props[iceio.S3SecretAccessKey] = cfg.S3.SecretAccessKey
		}
	case filepath.IsAbs(wh):
	default:
		return "", nil, fmt.Errorf("open lake: warehouse %q: want file://, s3:// or an absolute path", wh)
	}
	if !strings.Contains(wh, "://") && !cfg.ReadOnly {
		if err := mkdirAllDurable(wh); err != nil {
			return "", nil, fmt.Errorf("open lake: %w: %w", ErrWarehouse, err)
		}
	}
	props["warehouse"] = wh
	return wh, props, nil
}

// probeWarehouse writes and removes a small file so a bad endpoint, bucket,
// credentials or permissions fail at Open with a clear error.
func probeWarehouse(ctx context.Context, wh string, props iceberg.Properties) error {
	probe := strings.TrimSuffix(wh, "/") + "/.lakehouse-probe-" + rand.Text()
	fsys, err := iceio.LoadFS(ctx, props, probe)
	if err != nil {
		return fmt.Errorf("open lake: %w: %s: %w", ErrWarehouse, wh, err)
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("open lake: %w: %s: file IO %T cannot write", ErrWarehouse, wh, fsys)
	}
	if err := wfs.WriteFile(probe, []byte("probe")); err != nil {
		return fmt.Errorf("open lake: %w: write %s: %w", ErrWarehouse, probe, err)
	}
	if err := fsys.Remove(probe); err != nil {
		return fmt.Errorf("open lake: %w: remove %s: %w", ErrWarehouse, probe, err)
	}
	return nil
}
