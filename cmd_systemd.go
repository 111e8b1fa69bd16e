package main

import (
	"context"
	"fmt"
	"io"
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
ExecStart={{.Binary}} run --data /var/lib/{{.Name}} --http {{.HTTP}}{{range .Args}} {{.}}{{end}}
Restart=on-failure
RestartSec=5s
# Start-up recovery (re-running a planned batch, rebuilding lost state) may take minutes.
TimeoutStartSec=10min
# SIGTERM flushes the batch in flight and the progress rows.
TimeoutStopSec=2min
WatchdogSec={{.Watchdog}}
DynamicUser=yes
StateDirectory={{.Name}}
StateDirectoryMode=0750
WorkingDirectory=/var/lib/{{.Name}}
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
	Args                                   []string
}

func runSystemd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("systemd", stderr)
	var u unitParams
	fs.StringVar(&u.Name, "name", "lakehouse", "service name: the state directory is /var/lib/<name>")
	fs.StringVar(&u.Binary, "binary", "/usr/local/bin/lakehouse", "path of the installed binary (go build -o /usr/local/bin/lakehouse .)")
	fs.StringVar(&u.HTTP, "http", defaultHTTPAddr, "address of the dashboard and /metrics (loopback; see README for remote access)")
	fs.StringVar(&u.Watchdog, "watchdog", "3min", "WatchdogSec: restart when the pipeline has not progressed this long (a query stalls after 2 minutes)")
	fs.StringVar(&u.MemLimit, "memory-limit", "800MiB", "GOMEMLIMIT of the service")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	u.Args = fs.Args()
	if u.Name == "" || u.Binary == "" {
		return fmt.Errorf("--name and --binary must not be empty: %w", errUsage)
	}
	return unitTemplate.Execute(stdout, u)
}
