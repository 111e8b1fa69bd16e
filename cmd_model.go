package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"lakehouse/internal/appliance"
	"lakehouse/marts"
)

func init() {
	register(&command{name: "model", summary: "try a model of your own (model test FILE) on the lake, writing nothing (docs/models.md)", run: runModel})
}

func runModel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	sf := registerSession(fs, "trial")
	models := fs.String("models", os.Getenv("LAKEHOUSE_MODELS"), "the models directory, for a model that reads other models (env LAKEHOUSE_MODELS)")
	rows := fs.Int("rows", marts.DefaultTrialRows, "rows printed at most")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: lakehouse model test [flags] FILE\n\n"+
			"Compiles the model in FILE against the lake's tables, builds it on the newest\n"+
			"day or hour its inputs hold (the whole table for a model by table), runs its\n"+
			"checks there and prints its first rows. Nothing is written. It exits 1 when\n"+
			"the model is refused (file:line: rule: why) or a check fails.\n"+
			"The file format is in docs/models.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	orDemo(&c, fs, stderr)
	switch {
	case len(pos) == 0:
		fs.Usage()
		return fmt.Errorf("no subcommand given (want: model test FILE): %w", errUsage)
	case pos[0] != "test":
		return fmt.Errorf("unknown subcommand %q (want: model test FILE): %w", pos[0], errUsage)
	case len(pos) != 2:
		return fmt.Errorf("model test takes one model file, got %d: %w", len(pos)-1, errUsage)
	}
	t := appliance.ModelTrial{Warehouse: *sf.warehouse, File: pos[1], Models: *models, Format: *sf.format, Rows: *rows, Memory: *sf.memory, Timeout: *sf.timeout}
	if err := refused(t.Check()); err != nil {
		return err
	}
	if _, err := os.Stat(t.File); err != nil {
		return fmt.Errorf("model test: %w", err)
	}
	if err := needLake(c); err != nil {
		return err
	}
	return c.TryModel(ctx, t, stdout)
}
