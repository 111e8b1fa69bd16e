package table

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	iceio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"
)

// Observer reads the tables of a local warehouse directory straight from
// their metadata files, without the catalog: it never opens catalog.db, so it
// works beside a running appliance that holds the catalog's lock, and it
// never writes. A soak harness uses it to watch the lake from outside.
//
// A table's state is its metadata.json with the highest version that parses
// (<Dir>/<namespace>.db/<name>/metadata/<version>-<uuid>.metadata.json). A
// newer file may be half written, or be removed by a concurrent commit, and
// is skipped. A file written by a commit that then lost the catalog's
// compare-and-swap carries the same version as the winner's and is visible
// for the moment before its writer removes it: files of one version are
// tried newest first, so such a reading can show a snapshot that never
// became current. Only the catalog knows for sure; an observer sees what is
// on disk.
type Observer struct {
	// Dir is the warehouse directory (a plain local path; the appliance's
	// default is <data>/warehouse).
	Dir string
}

// TableView is one reading of a table's metadata files.
type TableView struct {
	Ident           string
	MetadataPath    string // the metadata.json read
	MetadataVersion int
	MetadataBytes   int64 // size of that file
	// MetadataFiles counts the metadata.json files present and
	// LargestMetadataBytes is the size of the largest of them.
	MetadataFiles        int
	LargestMetadataBytes int64
	// Skipped counts newer metadata files that did not parse or vanished
	// while being read.
	Skipped int
	// Snapshots are every snapshot in the metadata, oldest sequence number
	// first.
	Snapshots []Snapshot
	// CurrentSnapshotID is main's head (0: no snapshot yet).
	CurrentSnapshotID int64
	// DataFiles and Records are the current snapshot's total-data-files
	// and total-records (the live data files and rows).
	DataFiles int64
	Records   int64
	// LastSequence is the table's last-sequence-number: every snapshot
	// ever committed to it has a sequence number up to this one, so a
	// number in between that is in no reading was committed and expired
	// between two readings.
	LastSequence int64

	tbl *icetable.Table
}

// metadataName matches the file names the catalog writes:
// <version>-<uuid>[.codec].metadata.json.
var metadataName = regexp.MustCompile(`^(\d+)-[0-9a-fA-F-]{36}(?:\.(\w+))?\.metadata\.json$`)

// Tables returns the identifiers ("namespace.name") of the tables in the
// warehouse that have a metadata directory, sorted.
func (o Observer) Tables() ([]string, error) {
	nss, err := os.ReadDir(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("observe tables in %s: %w", o.Dir, err)
	}
	var out []string
	for _, ns := range nss {
		name, ok := strings.CutSuffix(ns.Name(), ".db")
		if !ns.IsDir() || !ok {
			continue
		}
		tbls, err := os.ReadDir(filepath.Join(o.Dir, ns.Name()))
		if err != nil {
			continue // removed meanwhile
		}
		for _, t := range tbls {
			if fi, err := os.Stat(filepath.Join(o.Dir, ns.Name(), t.Name(), "metadata")); err == nil && fi.IsDir() {
				out = append(out, name+"."+t.Name())
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

type metadataFile struct {
	path    string
	version int
	codec   string
	size    int64
	mod     time.Time
}

// Table reads ident's newest parseable metadata file. It returns an error
// wrapping ErrNoSuchTable when the table has no metadata directory or no
// metadata file that parses.
func (o Observer) Table(ctx context.Context, ident string) (*TableView, error) {
	id, err := parseIdent(ident)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.Dir, id[0]+".db", id[1], "metadata")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("observe %s: %w (no %s)", ident, ErrNoSuchTable, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("observe %s: %w", ident, err)
	}
	v := &TableView{Ident: ident}
	var files []metadataFile
	for _, e := range entries {
		m := metadataName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		ver, _ := strconv.Atoi(m[1])
		files = append(files, metadataFile{path: filepath.Join(dir, e.Name()), version: ver, codec: m[2], size: info.Size(), mod: info.ModTime()})
		v.MetadataFiles++
		v.LargestMetadataBytes = max(v.LargestMetadataBytes, info.Size())
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].version != files[j].version {
			return files[i].version > files[j].version
		}
		return files[i].mod.After(files[j].mod)
	})
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		meta, size, err := readMetadataFile(f)
		if err != nil {
			v.Skipped++
			continue
		}
		v.MetadataPath, v.MetadataVersion, v.MetadataBytes = f.path, f.version, size
		v.fill(meta)
		return v, nil
	}
	return nil, fmt.Errorf("observe %s: %w (no parseable metadata file of %d in %s)", ident, ErrNoSuchTable, len(files), dir)
}

func readMetadataFile(f metadataFile) (icetable.Metadata, int64, error) {
	raw, err := os.ReadFile(f.path)
	if err != nil {
		return nil, 0, err
	}
	size := int64(len(raw))
	switch f.codec {
	case "":
	case "gz":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, 0, err
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, fmt.Errorf("metadata codec %q", f.codec)
	}
	meta, err := icetable.ParseMetadataBytes(raw)
	if err != nil {
		return nil, 0, err
	}
	return meta, size, nil
}

func (v *TableView) fill(meta icetable.Metadata) {
	for _, s := range meta.Snapshots() {
		v.Snapshots = append(v.Snapshots, toSnapshot(s))
	}
	slices.SortFunc(v.Snapshots, func(a, b Snapshot) int { return cmp.Compare(a.Sequence, b.Sequence) })
	v.LastSequence = meta.LastSequenceNumber()
	if cur := meta.CurrentSnapshot(); cur != nil {
		v.CurrentSnapshotID = cur.SnapshotID
		if cur.Summary != nil {
			v.DataFiles = int64(cur.Summary.Properties.GetInt("total-data-files", 0))
			v.Records = int64(cur.Summary.Properties.GetInt("total-records", 0))
		}
	}
	id, _ := parseIdent(v.Ident)
	fsys := iceio.LoadFSFunc(nil, v.MetadataPath)
	dir, derr := filepath.Abs(filepath.Dir(filepath.Dir(v.MetadataPath)))
	if loc, err := localName(meta.Location()); err == nil && derr == nil && filepath.IsAbs(loc) {
		// The files are where this metadata file is, whatever root the
		// metadata names (a copied or moved data directory).
		rooted := newRootedFS(loc, dir)
		fsys = func(context.Context) (iceio.IO, error) { return rooted, nil }
	}
	v.tbl = icetable.New(id, meta, v.MetadataPath, fsys, nil)
}

// ReadAppended returns the rows that append snapshot snapshotID added,
// through the table's own file IO, in the table's current schema, limited
// to columns (none: all; named as the current schema names them). The
// caller releases the records. It returns an error wrapping
// ErrSnapshotNotFound if the snapshot is not in this reading; reading a
// snapshot whose files a later expiry or compaction removed fails.
func (v *TableView) ReadAppended(ctx context.Context, snapshotID int64, columns ...string) ([]arrow.RecordBatch, error) {
	if v.tbl.SnapshotByID(snapshotID) == nil {
		return nil, fmt.Errorf("read snapshot %d of %s: %w", snapshotID, v.Ident, ErrSnapshotNotFound)
	}
	tasks, err := planFiles(ctx, v.Ident, v.tbl.NewIncrementalAppendScan().FromSnapshotInclusive(snapshotID).ToSnapshot(snapshotID).PlanFiles)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", snapshotID, err)
	}
	var opts []icetable.ScanOption // no snapshot id: read with the current schema, as Lake.ReadAppended
	if len(columns) > 0 {
		opts = append(opts, icetable.WithSelectedFields(columns...))
	}
	scan := v.tbl.Scan(opts...)
	defer scan.Close()
	recs, err := readTasks(ctx, scan, tasks)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %d of %s: %w", snapshotID, v.Ident, err)
	}
	return recs, nil
}
