package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/humanize"
)

// proveIngestKills runs the ingest role alone cfg.IngestKills times, each
// killed inside an open Kafka transaction, then once more until Kafka
// holds the whole backlog, committed. It is inconclusive unless every
// run died at the hook and the topic then holds aborted records more than
// a fetch before a partition's end.
func proveIngestKills(ctx context.Context, cfg ProveConfig, res *ProveResult, args []string, rng *rand.Rand) error {
	ingest := append(slices.Clone(args), "--role", "ingest")
	hook := kafka.AfterProduceHook
	for k := 0; k < cfg.IngestKills; k++ {
		skip := rng.Intn(2) // committed batches before the one left open
		fmt.Fprintf(cfg.Out, "prove: ingest run %d of %d: the ingest role alone, killed inside its Kafka transaction (fault hook %s after %d committed batches)\n",
			k+1, cfg.IngestKills, hook, skip)
		c, err := launchLog(ctx, cfg, ingest, []string{fmt.Sprintf("LAKEHOUSE_CRASH_AT=%s:%d", hook, skip)}, fmt.Sprintf("prove-ingest-%d.log", k+1))
		if err != nil {
			return err
		}
		if err := waitExit(ctx, c, cfg.DrainTimeout); err != nil {
			return err
		}
		if !c.SawFault(hook) || !c.KilledBySignal() {
			return fmt.Errorf("%w: ingest run %d did not die at fault hook %s (%v); see %s", ErrInconclusive, k+1, hook, c.Wait(), c.LogPath())
		}
	}
	fmt.Fprintf(cfg.Out, "prove: ingest run %d: the ingest role alone until Kafka holds the backlog of %s events\n", cfg.IngestKills+1, humanize.Count(res.Backlog))
	c, err := launchLog(ctx, cfg, ingest, nil, fmt.Sprintf("prove-ingest-%d.log", cfg.IngestKills+1))
	if err != nil {
		return err
	}
	if err := waitCommitted(ctx, cfg.brokerURL, DefaultTopic, res.Backlog, cfg.DrainTimeout); err != nil {
		c.Kill()
		return fmt.Errorf("%w; see %s", err, c.LogPath())
	}
	if err := c.Stop(time.Minute); err != nil {
		return err
	}
	all, err := readKafka(ctx, cfg.brokerURL, DefaultTopic, false)
	if err != nil {
		return err
	}
	committed, err := readKafka(ctx, cfg.brokerURL, DefaultTopic, true)
	if err != nil {
		return err
	}
	var first map[int32]int64
	res.Aborted, first = abortedStats(all, committed)
	if res.AbortedBeyond, err = storedAfter(ctx, cfg.brokerURL, DefaultTopic, first); err != nil {
		return err
	}
	res.committed = map[int32][]int64{}
	for p, kp := range committed {
		res.committed[p] = kp.offsets
	}
	fmt.Fprintf(cfg.Out, "prove: Kafka holds %s aborted records in %s, up to %s of batches on the broker from a partition's first (a fetch reads %s)\n",
		humanize.Count(res.Aborted), DefaultTopic, humanize.Bytes(res.AbortedBeyond), humanize.Bytes(kafka.FetchBytes))
	if res.Aborted == 0 || res.AbortedBeyond <= kafka.FetchBytes {
		return fmt.Errorf("%w: the ingest kills left %d aborted records with at most %d bytes of batches from them to the end: no reader of the backlog needs more than one fetch to pass them (raise --loops)",
			ErrInconclusive, res.Aborted, res.AbortedBeyond)
	}
	return nil
}

// waitCommitted follows topic with a read-committed franz-go consumer
// until it has read want records.
func waitCommitted(ctx context.Context, url, topic string, want int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg, err := kafka.ParseURL(url)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(consumerFetchBytes), kgo.FetchMaxPartitionBytes(consumerPartitionBytes))
	if err != nil {
		return fmt.Errorf("kafka consumer: %w", err)
	}
	defer cl.Close()
	var n int64
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("kafka holds %d of %d committed records of %s after %s", n, want, topic, timeout)
		}
		fs.EachRecord(func(*kgo.Record) { n++ })
	}
	return nil
}

// kafkaCheck opens the cluster read-only and runs checkKafkaCommitted on
// the topic and the dead-letter topic.
func kafkaCheck(ctx context.Context, cfg ProveConfig) (Check, error) {
	log, err := openBroker(ctx, "", cfg.brokerURL)
	if err != nil {
		return Check{}, err
	}
	defer log.Close()
	var topics []string
	for _, t := range []string{DefaultTopic, DefaultDLQTopic} {
		if _, err := log.Offsets(ctx, t); err == nil {
			topics = append(topics, t)
		} else if !errors.Is(err, broker.ErrUnknownTopic) {
			return Check{}, err
		}
	}
	return checkKafkaCommitted(ctx, cfg.brokerURL, log, topics...)
}
