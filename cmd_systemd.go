package main

import (
	"context"
	"fmt"
	"io"
	"lakehouse/internal/appliance"
	"strings"
)

func init() {
	register(&command{name: "systemd", summary: "print a systemd unit that runs the appliance as a service (Type=notify, watchdog, hardening)", run: runSystemd})
}

func runSystemd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("systemd", stderr)
	var u appliance.Unit
	fs.StringVar(&u.Name, "name", "lakehouse", "service name: the state directory is /var/lib/<name>")
	fs.StringVar(&u.Binary, "binary", "/usr/local/bin/lakehouse", "path of the installed binary (go build -o /usr/local/bin/lakehouse .)")
	fs.StringVar(&u.HTTP, "http", defaultHTTPAddr, "address of the dashboard and /metrics (loopback; see README for remote access)")
	fs.StringVar(&u.Watchdog, "watchdog", "3min", "WatchdogSec: restart when the pipeline has not progressed this long (a query stalls after 2 minutes)")
	fs.StringVar(&u.MemLimit, "memory-limit", "800MiB", "GOMEMLIMIT of the service")
	fs.StringVar(&u.Data, "data", "", "the service's data directory, an absolute path (default /var/lib/<name>); outside /var/lib the unit runs as --user instead of a dynamic user")
	fs.StringVar(&u.User, "user", "lakehouse", "the service's user when --data is outside /var/lib")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: lakehouse systemd [flags] [-- run flags]\n\n"+
			"Prints a unit whose ExecStart is `lakehouse run --data DIR --http ADDR` and the\n"+
			"run flags after \"--\", checked as run checks them.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlagsAndArgs(fs, args); err != nil {
		return err
	}
	u.Args = fs.Args()
	if n := len(args) - len(u.Args); len(u.Args) > 0 && (n == 0 || args[n-1] != "--") {
		return fmt.Errorf("unexpected argument %q: run's flags go after \"--\", as in lakehouse systemd --data /var/lib/lakehouse -- --retention 72h: %w", u.Args[0], errUsage)
	}
	if u.Name == "" || u.Binary == "" {
		return fmt.Errorf("--name and --binary must not be empty: %w", errUsage)
	}
	if u.Data == "" {
		u.Data = "/var/lib/" + u.Name
	}
	if err := u.Place(); err != nil {
		return fmt.Errorf("%w: %w", err, errUsage)
	}
	if err := checkUnitRunFlags(u); err != nil {
		return err
	}
	return u.Write(stdout)
}

// checkUnitRunFlags parses the unit's ExecStart arguments as run would, so
// a unit that could never start (a misspelt flag, a bad value) is refused
// now rather than by systemd's restart loop.
func checkUnitRunFlags(u appliance.Unit) error {
	for _, a := range u.Args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "data" || name == "http") {
			return fmt.Errorf("%s after \"--\": give it to systemd itself (lakehouse systemd --%s ...), before \"--\": %w", a, name, errUsage)
		}
	}
	var msgs strings.Builder
	args := append([]string{"--data", u.Data, "--http", u.HTTP}, u.Args...)
	if _, err := parseRunFlags(args, &msgs); err != nil {
		if first, _, _ := strings.Cut(msgs.String(), "\n"); first != "" && err == errUsage {
			err = fmt.Errorf("%s: %w", first, errUsage) // the flag package's line, without run's usage after it
		}
		return fmt.Errorf("the run flags for ExecStart: %w", err)
	}
	return nil
}
