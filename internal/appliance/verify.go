package appliance

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lakehouse/broker"
	"lakehouse/internal/boltfile"
	"lakehouse/internal/progress"
	"lakehouse/table/catalog"
	"lakehouse/verify"
)

// verifyLease bounds what a verify beside a running appliance holds back
// from snapshot expiry (it releases its lease when done).
const verifyLease = 2 * time.Hour

// Verification is what `lakehouse verify` found: the embedded files'
// pages (Files says what was checked; FilesSkipped when a running
// appliance holds them) and verify's checks of every layer.
type Verification struct {
	Files        string
	FilesSkipped bool
	verify.Report
}

// Verify checks the lake in c.Data against exp (verify.Run). Beside an
// appliance running there it reads through it, holding back its expiry
// while it reads, and leaves the page check of the files it holds for
// when it is stopped; otherwise it first reads every page of the embedded
// broker.db and catalog.db (CheckFiles). A failed check is the
// Verification with verify.ErrFailed.
func (c *Store) Verify(ctx context.Context, warehouse string, exp verify.Expect, show progress.Display) (Verification, error) {
	var v Verification
	db, lake, live, err := c.OpenReaders(ctx, warehouse, true, true)
	if err != nil {
		return v, err
	}
	defer db.Close()
	defer lake.Close()
	if live != nil {
		v.FilesSkipped = true
		v.Files = "held by the appliance running on this data directory (pid " + strconv.Itoa(live.Info().PID) + "); verify checks every page when it is stopped"
		_, release, err := leaseTables(ctx, live, lake, verifyLease)
		if err != nil {
			return v, err
		}
		defer release()
	} else if v.Files, err = c.CheckFiles(); err != nil {
		return v, err
	}
	v.Report, err = verify.Run(ctx, db, lake, exp, show)
	return v, err
}

// CheckFiles reads every page of the embedded broker.db and catalog.db
// (boltfile.Check): the full check no open does (an open reads a few pages
// whatever the file's size, and a damaged page deeper in the file is found
// by the first transaction that reads it). It returns a line saying what
// it checked, or the first damaged file as an error naming it with the way
// out. A Kafka broker or a REST catalog has no file here.
func (c *Store) CheckFiles() (string, error) {
	var done []string
	add := func(name string, s boltfile.Summary) {
		done = append(done, fmt.Sprintf("%s %d pages of %d bytes (%d in use, %d free)", name, s.Pages, s.PageSize, s.Reachable, s.Free))
	}
	if !c.Kafka() {
		s, err := broker.CheckFile(c.BrokerPath())
		if err != nil {
			return "", err
		}
		add("broker.db", s)
	}
	if c.Catalog == "" {
		s, err := catalog.CheckFile(filepath.Join(c.Data, "catalog.db"))
		if err != nil {
			return "", err
		}
		add("catalog.db", s)
	}
	if len(done) == 0 {
		return "no embedded broker or catalog", nil
	}
	return strings.Join(done, ", ") + ": every page in use read and reached once, the others free", nil
}
