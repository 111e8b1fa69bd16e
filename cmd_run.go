package main

import (
	"context"
	"fmt"
	"io"
	"lakehouse/internal/appliance"
)

func init() {
	register(&command{name: "run", summary: "run the appliance on the live stream (the default command)", run: runRun})
}

// parseRunFlags parses and checks run's flags: run itself and systemd,
// which checks the flags it writes into the unit's ExecStart, use it.
func parseRunFlags(args []string, stderr io.Writer) (*pipelineFlags, error) {
	fs := newFlags("run", stderr)
	f := new(pipelineFlags)
	f.register(fs)
	fs.StringVar(&f.Role, "role", envOr(envRole, appliance.RoleAll), "the part of the appliance this process runs: all, or ingest, stream or marts as separate processes over --broker kafka://... and --catalog rest+http://... (env "+envRole+")")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	f.warehouseDefaults(fs)
	if err := refused(f.Check(true)); err != nil {
		return nil, err
	}
	if err := f.checkHTTP(); err != nil {
		return nil, err
	}
	return f, nil
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pf, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	f := *pf
	killAt, err := killAtFromEnv()
	if err != nil {
		return err
	}
	f.KillAtBronze = killAt
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	p, err := appliance.Open(ctx, f.Config, log)
	if err != nil {
		return err
	}
	defer p.Close()
	if lake := p.Lake(); lake != nil {
		log.Info("lakehouse running", "role", f.RoleName(), "data", f.Data, "broker", f.BrokerName(), "source", f.Source, "warehouse", lake.Warehouse())
	} else {
		log.Info("lakehouse running", "role", f.RoleName(), "data", f.Data, "broker", f.BrokerName(), "source", f.Source)
	}
	if err := p.Run(ctx, stderr); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "lakehouse: stopped cleanly")
	return nil
}
