package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"lakehouse/broker"
	"lakehouse/internal/appliance"
	"lakehouse/internal/boltfile"
	"lakehouse/table/catalog"
)

// checkBoltFiles reads every page of the embedded broker.db and catalog.db
// (boltfile.Check): the full check no open does (an open reads a few pages
// whatever the file's size, and a damaged page deeper in the file is found
// by the first transaction that reads it). It returns a line saying what
// it checked, or the first damaged file as an error naming it with the way
// out. A Kafka broker or a REST catalog has no file here.
func checkBoltFiles(c *appliance.Store) (string, error) {
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
