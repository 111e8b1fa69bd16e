// Command lakehouse is the embedded lakehouse appliance: one process that
// takes the Wikimedia recentchange stream from the wire to queryable gold
// marts, with exactly-once landing proved by a kill test.
//
// Only this package reads flags and the environment; every other package is
// configured through exported fields. The appliance itself is
// internal/appliance: this package turns run's flags into its Config and
// calls Open and Run, one file per subcommand (cmd_*.go); docs/source.md
// maps the packages.
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

	"lakehouse/internal/appliance"
	"lakehouse/internal/boltfile"
	"lakehouse/internal/humanize"
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

// programFlags are the flags taken before any command: --help and
// --version (with one dash too), and -h.
var programFlags = map[string]func(stdout io.Writer){
	"help":    usage,
	"h":       usage,
	"version": func(w io.Writer) { printVersion(context.Background(), w) },
}

func run(args []string, stdout, stderr io.Writer) int {
	name := "run"
	if len(args) > 0 {
		a := args[0]
		if opt, ok := strings.CutPrefix(a, "-"); ok {
			if f := programFlags[strings.TrimPrefix(opt, "-")]; f != nil {
				f(stdout)
				return 0
			}
			fmt.Fprintf(stderr, "lakehouse: %s\n", flagsFirst(args))
			return 2
		}
		name, args = args[0], args[1:]
	}
	if name == "help" {
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
	boltfile.Holder = "lakehouse " + name
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ie interruptedError
		if errors.As(err, &ie) || ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Ctrl-C: one line, the shell's status for SIGINT, and
			// none of the cancellation's chain of wrapped errors.
			msg := "interrupted"
			if ie.state != "" {
				msg += ": " + ie.state
			}
			fmt.Fprintf(stderr, "lakehouse %s: %s\n", name, msg)
			return exitInterrupted
		}
		if errors.Is(err, errUsage) {
			if err != errUsage { // a usage error with a message of its own
				fmt.Fprintf(stderr, "lakehouse %s: %s\n", name, strings.TrimSuffix(err.Error(), ": "+errUsage.Error()))
			}
			return 2
		}
		fmt.Fprintf(stderr, "lakehouse %s: %v\n", name, err)
		if hint := appliance.Hint(err, self()); hint != "" {
			fmt.Fprintf(stderr, "lakehouse %s: %s\n", name, hint)
		}
		return 1
	}
	return 0
}

// flagsFirst is the error for flags given before the command: they would
// otherwise be run's, and the command after them its stray argument. It
// shows the line with the flags moved after the first command it names.
func flagsFirst(args []string) string {
	msg := fmt.Sprintf("%q comes before the command: flags go after it, as in `lakehouse <command> [flags]`", args[0])
	for i, a := range args {
		if commands[a] != nil && a != "help" {
			moved := append(append([]string{a}, args[i+1:]...), args[:i]...)
			return msg + "; here: lakehouse " + humanize.ShellJoin(moved)
		}
	}
	return msg + "; `lakehouse help` lists the commands"
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "lakehouse: the Wikimedia recentchange stream, from the wire to gold marts, exactly once.")
	fmt.Fprintln(w, "\nUsage: lakehouse <command> [flags]   (flags go after the command; lakehouse help <command> lists its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nWith no command, lakehouse runs `run`. lakehouse --version prints the version.")
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
		if err := parseFlagsAndArgs(fs, args); err != nil {
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

// parseFlags parses a command that takes flags only: an argument that is
// not a flag (a typo, a value after a boolean flag, a second command) is
// an error rather than silently ignored.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseFlagsAndArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: %s takes flags only, after the command name (a boolean flag takes a value as --flag=false): %w",
			fs.Arg(0), fs.Name(), errUsage)
	}
	return nil
}

// parseFlagsAndArgs parses the flags up to the first argument that is not
// one, leaving the rest in fs.Args().
func parseFlagsAndArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

// exitInterrupted is the status of a command that Ctrl-C stopped before it
// was done, as a shell reports a process SIGINT killed (128+2).
const exitInterrupted = 130

// interruptedError is a command stopped by Ctrl-C or SIGTERM before it was
// done; state says what it left behind.
type interruptedError struct{ state string }

func (e interruptedError) Error() string { return "interrupted: " + e.state }

func interrupted(state string) error { return interruptedError{state: state} }
