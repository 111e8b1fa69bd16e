package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
)

// envBroker is --broker in the environment.
const envBroker = "LAKEHOUSE_BROKER"

// kafkaBroker reports whether --broker names a Kafka cluster rather than
// the embedded <data>/broker.db.
func (c *common) kafkaBroker() bool { return c.brokerURL != "" }

// brokerName is what messages call the broker: the file, or the cluster.
func (c *common) brokerName() string {
	if c.kafkaBroker() {
		cfg, err := kafka.ParseURL(c.brokerURL)
		if err != nil {
			return "the Kafka cluster"
		}
		return "Kafka at " + strings.Join(cfg.Seeds, ",")
	}
	return c.brokerPath()
}

// checkBroker checks --broker's syntax (an empty one is the embedded file).
func (c *common) checkBroker(e *flagErrors) {
	if !c.kafkaBroker() {
		return
	}
	if _, err := kafka.ParseURL(c.brokerURL); err != nil {
		e.add("broker", "%v: want kafka://host:port[,host:port...] or kafkas://... for TLS", err)
	}
}

// openBroker opens the broker: the embedded log in the data directory
// (created if needed) or the Kafka cluster --broker names. appends says
// whether this process appends (runs ingest): on Kafka only then does it
// register the producer identity, which fences an older producer.
func (c *common) openBroker(ctx context.Context, opts broker.Options, appends bool) (broker.Log, error) {
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if c.kafkaBroker() {
		return c.openKafka(ctx, func(cfg *kafka.Config) { cfg.NoAppend = !appends })
	}
	return broker.Open(c.brokerPath(), opts)
}

// openBrokerExisting opens the broker only if it already exists, so that
// a command never creates an empty lake by accident; readOnly opens the
// embedded one without ever writing to it (commands that only read). A
// Kafka cluster exists if it answers; its topics are checked by the
// command's first read.
func (c *common) openBrokerExisting(ctx context.Context, readOnly bool) (broker.Log, error) {
	if c.kafkaBroker() {
		return c.openKafka(ctx, func(cfg *kafka.Config) { cfg.ReadOnly = readOnly })
	}
	if _, err := os.Stat(c.brokerPath()); err != nil {
		return nil, fmt.Errorf("no broker at %s (run `%s demo` or `%[2]s run` first, or pass --data): %w", c.brokerPath(), self(), err)
	}
	return broker.Open(c.brokerPath(), broker.Options{ReadOnly: readOnly})
}

// openKafka opens the cluster --broker names, with set's changes to the
// URL's settings.
func (c *common) openKafka(ctx context.Context, set func(*kafka.Config)) (broker.Log, error) {
	cfg, err := kafka.ParseURL(c.brokerURL)
	if err != nil {
		return nil, fmt.Errorf("--broker: %w", err)
	}
	set(&cfg)
	l, err := kafka.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open broker %s: %w", c.brokerName(), err)
	}
	return l, nil
}
