package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/template"
)

func init() {
	register(&command{name: "systemd", summary: "print a systemd unit that runs the appliance as a service (Type=notify, watchdog, hardening)", run: runSystemd})
}

// unitTemplate is the service unit. Type=notify: systemd counts the service
// started once every query has recovered its position (READY=1); the
// watchdog is fed only while the pipeline progresses, so a stalled query
// gets the process restarted; SIGTERM drains and stops cleanly.
var unitTemplate = template.Must(template.New("unit").Parse(`# lakehouse.service: the Wikimedia recentchange stream, from the wire to gold marts, exactly once.
# Install: lakehouse systemd > /etc/systemd/system/lakehouse.service
#          systemctl daemon-reload && systemctl enable --now lakehouse
# Watch:   journalctl -u lakehouse -f   (JSON lines)   |   lakehouse status   |   http://{{.HTTP}}/
[Unit]
Description=lakehouse appliance: Wikimedia recentchange to Iceberg and gold marts
Wants=network-online.target
After=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStart={{.Binary}} run --data {{.Data}} --http {{.HTTP}}{{range .Args}} {{.}}{{end}}
Restart=on-failure
RestartSec=5s
# Start-up recovery (re-running a planned batch, rebuilding lost state) may take minutes.
TimeoutStartSec=10min
# SIGTERM flushes the batch in flight and the progress rows.
TimeoutStopSec=2min
WatchdogSec={{.Watchdog}}
{{if .StateDir}}DynamicUser=yes
StateDirectory={{.StateDir}}
StateDirectoryMode=0750
{{else}}# --data is outside /var/lib: the user must exist and own it, as in
#   useradd --system --no-create-home {{.User}} && mkdir -p {{.Data}} && chown {{.User}}: {{.Data}}
User={{.User}}
ReadWritePaths={{.Data}}
{{end}}WorkingDirectory={{.Data}}
Environment=GOMEMLIMIT={{.MemLimit}}
LimitNOFILE=65536

NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
SystemCallArchitectures=native
CapabilityBoundingSet=
AmbientCapabilities=

[Install]
WantedBy=multi-user.target
`))

type unitParams struct {
	Name, Binary, HTTP, Watchdog, MemLimit string
	// Data is the data directory; StateDir its path under /var/lib when
	// it is there (systemd creates it, owned by the dynamic user), and
	// User the service's user when it is not.
	Data, StateDir, User string
	Args                 []string
}

func runSystemd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("systemd", stderr)
	var u unitParams
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
	if err := u.place(); err != nil {
		return err
	}
	if err := checkUnitRunFlags(u); err != nil {
		return err
	}
	return unitTemplate.Execute(stdout, u)
}

// place derives where the unit keeps its data: a directory under /var/lib
// is a StateDirectory of a dynamic user, any other one needs a user.
func (u *unitParams) place() error {
	if !filepath.IsAbs(u.Data) {
		return fmt.Errorf("--data %q: want an absolute path (systemd runs the service from /): %w", u.Data, errUsage)
	}
	u.Data = filepath.Clean(u.Data)
	if rel, ok := strings.CutPrefix(u.Data, "/var/lib/"); ok && rel != "" {
		u.StateDir = rel
		return nil
	}
	if u.User == "" {
		return fmt.Errorf("--data %s is outside /var/lib: the service needs --user: %w", u.Data, errUsage)
	}
	return nil
}

// checkUnitRunFlags parses the unit's ExecStart arguments as run would, so
// a unit that could never start (a misspelt flag, a bad value) is refused
// now rather than by systemd's restart loop.
func checkUnitRunFlags(u unitParams) error {
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
