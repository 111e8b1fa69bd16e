package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"lakehouse/internal/fault"
	"lakehouse/verify"
)

func init() {
	register(&command{name: "prove", summary: "the kill test: run the appliance, SIGKILL it mid-backlog, restart, verify", run: runProve})
}

func runProve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("prove", stderr)
	var cfg verify.ProveConfig
	fs.IntVar(&cfg.Kills, "kills", verify.DefaultKills, "how many times to SIGKILL the appliance mid-backlog")
	fs.Int64Var(&cfg.Seed, "seed", 0, "scenario seed (0: random, printed)")
	fs.StringVar(&cfg.CrashAt, "crash-at", "", "make the first kill at this fault hook instead of a random moment (see --hooks)")
	fs.IntVar(&cfg.CrashSkip, "crash-skip", 0, "hits of the --crash-at hook to let pass before it fires (0: random 1 to 3)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "replay pace in events/s (0: flat out); ingest-path hooks need a pace to land mid-backlog")
	fs.IntVar(&cfg.IngestKills, "ingest-kills", 0, "with --broker kafka: first run the ingest role alone this many times, each killed inside an open Kafka transaction, then until Kafka holds the backlog, which bronze then reads from offset 0 (aborted transactions more than a fetch before the end)")
	fs.BoolVar(&cfg.CheckpointLoss, "checkpoint-loss", false, "delete the bronze checkpoint before the last restart (the default policy must still give zero duplicates)")
	fs.IntVar(&cfg.Loops, "loops", verify.DefaultLoops, "loops of the recording, each with fresh event ids")
	fs.IntVar(&cfg.Sample, "sample", verify.DefaultSample, "events in the recording")
	fs.DurationVar(&cfg.Trigger, "trigger", verify.DefaultProveTrigger, "trigger of the appliance's streams")
	fs.IntVar(&cfg.MaxOffsetsPerTrigger, "max-offsets-per-trigger", 0, fmt.Sprintf("bronze batch size cap (0: sized so the backlog holds 2 x kills + 3 batches, at most %d)", verify.DefaultProveMaxOffset))
	fs.StringVar(&cfg.DataDir, "data", "", "fresh data directory for the run (default: a new temporary directory, kept)")
	fs.BoolVar(&cfg.RESTCatalog, "rest-catalog", false, "keep the tables in an Iceberg REST catalog this command serves on loopback (the appliance runs with --catalog rest+http://...)")
	brokerKind := fs.String("broker", "embedded", "the appliance's broker: embedded (broker.db) or kafka (a Kafka cluster, kfake, this command runs on loopback)")
	warehouseKind := fs.String("warehouse", "local", "the appliance's warehouse: local (<data>/warehouse) or s3 (an S3 bucket, gofakes3, this command serves on loopback)")
	hooks := fs.Bool("hooks", false, "list the fault hooks and exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch *brokerKind {
	case "embedded":
	case "kafka":
		cfg.Kafka = true
	default:
		return fmt.Errorf("--broker %q: want embedded or kafka: %w", *brokerKind, errUsage)
	}
	switch *warehouseKind {
	case "local":
	case "s3":
		cfg.S3 = true
	default:
		return fmt.Errorf("--warehouse %q: want local or s3: %w", *warehouseKind, errUsage)
	}
	if cfg.IngestKills > 0 && !cfg.Kafka {
		return fmt.Errorf("--ingest-kills needs --broker kafka (the ingest role runs on a shared broker): %w", errUsage)
	}
	if *hooks {
		for _, h := range fault.Known() {
			fmt.Fprintf(stdout, "%-28s %s\n", h[0], h[1])
		}
		return nil
	}
	if cfg.CrashAt != "" && !knownHook(cfg.CrashAt) {
		return fmt.Errorf("--crash-at %q: not a fault hook (lakehouse prove --hooks lists them): %w", cfg.CrashAt, errUsage)
	}
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "lakehouse-prove-")
		if err != nil {
			return err
		}
		cfg.DataDir = dir
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	cfg.Launch = func(args []string) *exec.Cmd {
		return exec.Command(exe, append([]string{"run"}, args...)...)
	}
	cfg.Out = stdout
	cfg.Progress = display(stdout)
	res, err := verify.Prove(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%w (seed %d; logs in %s)", err, res.Seed, cfg.DataDir)
	}
	return nil
}

func knownHook(name string) bool {
	for _, h := range fault.Known() {
		if strings.EqualFold(h[0], name) {
			return true
		}
	}
	return false
}
