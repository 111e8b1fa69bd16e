package verify

import (
	"context"
	"errors"
	"path/filepath"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/progress"
	"lakehouse/table"
)

// openBroker opens the broker a prove run's appliance used: its data
// directory's broker.db, or the Kafka cluster at url.
func openBroker(ctx context.Context, dir, url string) (broker.Log, error) {
	if url == "" {
		return broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	}
	cfg, err := kafka.ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg.ReadOnly = true // registers no producer: fences nobody
	return kafka.Open(ctx, cfg)
}

// RunDir opens the broker (broker.db, or the Kafka cluster at brokerURL)
// and the lake of a stopped appliance read-only and runs the verifier,
// showing its reading on show.
func RunDir(ctx context.Context, lakeCfg table.Config, brokerURL string, exp Expect, show progress.Display) (Report, error) {
	db, err := openBroker(ctx, lakeCfg.Dir, brokerURL)
	if err != nil {
		return Report{}, err
	}
	defer db.Close()
	lake, err := table.Open(ctx, lakeCfg)
	if err != nil {
		return Report{}, err
	}
	defer lake.Close()
	return Run(ctx, db, lake, exp, show)
}

func bronzeRows(ctx context.Context, lakeCfg table.Config) (int64, error) {
	lake, err := table.Open(ctx, lakeCfg)
	if err != nil {
		return 0, err
	}
	defer lake.Close()
	recs, err := lake.Scan(ctx, table.Bronze)
	if err != nil {
		if errors.Is(err, table.ErrNoSuchTable) {
			return 0, nil
		}
		return 0, err
	}
	defer release(recs)
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n, nil
}
