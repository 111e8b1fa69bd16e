package appliance

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/template"
)

// unitTemplate is the service unit (Unit.Write). Type=notify: systemd
// counts the service started once every query has recovered its position
// (READY=1); the watchdog is fed only while the pipeline progresses, so a
// stalled query gets the process restarted; SIGTERM drains and stops
// cleanly.
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

// Unit is a systemd service unit that runs the appliance: Type=notify,
// the watchdog, hardening (`lakehouse systemd` prints it).
type Unit struct {
	Name, Binary, HTTP, Watchdog, MemLimit string
	// Data is the data directory; StateDir its path under /var/lib when
	// it is there (systemd creates it, owned by the dynamic user), and
	// User the service's user when it is not.
	Data, StateDir, User string
	Args                 []string
}

// Place derives where the unit keeps its data: a directory under /var/lib
// is a StateDirectory of a dynamic user, any other one needs a user.
func (u *Unit) Place() error {
	if !filepath.IsAbs(u.Data) {
		return fmt.Errorf("--data %q: want an absolute path (systemd runs the service from /)", u.Data)
	}
	u.Data = filepath.Clean(u.Data)
	if rel, ok := strings.CutPrefix(u.Data, "/var/lib/"); ok && rel != "" {
		u.StateDir = rel
		return nil
	}
	if u.User == "" {
		return fmt.Errorf("--data %s is outside /var/lib: the service needs --user", u.Data)
	}
	return nil
}

// Write writes the unit file.
func (u Unit) Write(w io.Writer) error { return unitTemplate.Execute(w, u) }
