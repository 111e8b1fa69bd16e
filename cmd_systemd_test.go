package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSystemdUnit: the printed unit is a notify service with a watchdog, a
// dynamic user, a state directory and the usual hardening, running `run`
// on that directory.
func TestSystemdUnit(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"systemd", "--binary", "/opt/lh/lakehouse", "--", "--retention", "72h"}, &out, &errb); code != 0 {
		t.Fatalf("systemd: exit %d: %s", code, errb.String())
	}
	unit := out.String()
	for _, want := range []string{"Type=notify", "WatchdogSec=3min", "DynamicUser=yes", "StateDirectory=lakehouse",
		"ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectHome=yes",
		"ExecStart=/opt/lh/lakehouse run --data /var/lib/lakehouse --http 127.0.0.1:8080 --retention 72h",
		"[Install]", "WantedBy=multi-user.target"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
}
