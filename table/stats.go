package table

import (
	"context"
	"strconv"
)

// Stats is what a table's current metadata says about its size: cheap to
// read (no manifest is opened), so maintenance can decide what is due from
// it on every pass and an operator can watch it.
type Stats struct {
	Snapshots     int   // snapshots the metadata holds (every ref's history)
	SnapshotID    int64 // the current snapshot of main (0: none)
	CommittedMs   int64 // the current snapshot's timestamp, Unix ms (0: none)
	DataFiles     int64 // live data files of the current snapshot
	Records       int64 // live rows of the current snapshot
	DataBytes     int64 // size of the live data files
	MetadataFiles int   // metadata.json files the metadata log keeps, plus the current one
}

// Stats returns ident's Stats from its current metadata.
func (l *Lake) Stats(ctx context.Context, ident string) (Stats, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return Stats{}, err
	}
	md := tbl.Metadata()
	st := Stats{Snapshots: len(md.Snapshots()), MetadataFiles: 1}
	for range md.PreviousFiles() {
		st.MetadataFiles++
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return st, nil
	}
	st.SnapshotID, st.CommittedMs = snap.SnapshotID, snap.TimestampMs
	if snap.Summary != nil {
		get := func(k string) int64 {
			n, _ := strconv.ParseInt(snap.Summary.Properties[k], 10, 64)
			return n
		}
		st.DataFiles, st.Records, st.DataBytes = get("total-data-files"), get("total-records"), get("total-files-size")
	}
	return st, nil
}
