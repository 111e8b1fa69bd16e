// Command lakehouse is the embedded lakehouse appliance: one process that
// takes the Wikimedia recentchange stream from the wire to queryable gold
// marts, with exactly-once landing proved by a kill test.
//
// Only this package reads flags and the environment; every other package is
// configured through exported fields.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand of the CLI.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage marks a command-line mistake: the usage has been printed.
var errUsage = errors.New("usage error")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	name := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" || name == "-h" || name == "--help" {
		if len(args) > 0 {
			if c := commands[args[0]]; c != nil {
				_ = c.run(context.Background(), []string{"-h"}, stdout, stdout)
				return 0
			}
		}
		usage(stdout)
		return 0
	}
	c := commands[name]
	if c == nil {
		fmt.Fprintf(stderr, "lakehouse: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	if err := armFaultsFromEnv(stderr); err != nil {
		fmt.Fprintf(stderr, "lakehouse: %v\n", err)
		return 2
	}
	applyRuntimeDefaults()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			if err != errUsage { // a usage error with a message of its own
				fmt.Fprintf(stderr, "lakehouse %s: %v\n", name, err)
			}
			return 2
		}
		fmt.Fprintf(stderr, "lakehouse %s: %v\n", name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "lakehouse: the Wikimedia recentchange stream, from the wire to gold marts, exactly once.")
	fmt.Fprintln(w, "\nUsage: lakehouse <command> [flags]   (lakehouse help <command> for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}

// newFlags returns a flag set whose errors and help go to stderr and whose
// parse errors are reported as errUsage.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lakehouse "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterspersed parses flags wherever they stand in args, before,
// between or after the positional arguments (fs.Parse alone stops at the
// first non-flag), and returns the positional arguments in order.
// Everything after a "--" is positional, so a positional argument that
// starts with "-" can be passed after one.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}
