package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestFlagsBeforeCommandRefused: flags before the command used to be run's
// (so `lakehouse --data x query ...` ran the appliance on the live stream);
// they are a usage error showing where they go, and nothing is created.
func TestFlagsBeforeCommandRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", dir, "--http", "127.0.0.1:0", "query", "SELECT 1"}, "here: lakehouse query 'SELECT 1' --data " + dir + " --http 127.0.0.1:0"},
		{[]string{"--data", dir}, "`lakehouse help` lists the commands"},
		{[]string{"-refresh", "1m", "run"}, "here: lakehouse run -refresh 1m"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "comes before the command: flags go after it") || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("lakehouse %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errb.String(), tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("lakehouse %v made %s (%v)", tc.args, dir, err)
		}
	}
}

// TestStrayArgumentsRefused: a command that takes flags only refuses an
// argument that is not one (it used to be ignored), naming it.
func TestStrayArgumentsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	for _, args := range [][]string{
		{"run", "bogus-arg", "--data", dir},
		{"run", "--data", dir, "--no-ingest", "false"},
		{"verify", "--data", dir, "extra"},
		{"topics", "--data", dir, "extra"},
		{"status", "--data", dir, "extra"},
		{"demo", "--data", dir, "extra"},
		{"version", "extra"},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "unexpected argument") || !strings.Contains(errb.String(), "takes flags only") {
			t.Errorf("lakehouse %v: exit %d, stderr %q; want exit 2 and the unexpected argument named", args, code, errb.String())
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("lakehouse %v made %s (%v)", args, dir, err)
		}
	}
}

// TestHelpListsCommands: --help, -h and help list the commands (version
// among them), never run's flags.
func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("lakehouse %v: exit %d: %s", args, code, errb.String())
		}
		s := out.String()
		for _, want := range []string{"Commands:", "  query ", "  version ", "  systemd ", "flags go after the command"} {
			if !strings.Contains(s, want) {
				t.Errorf("lakehouse %v lacks %q:\n%s", args, want, s)
			}
		}
		if strings.Contains(s+errb.String(), "-max-offsets-per-trigger") {
			t.Errorf("lakehouse %v prints run's flags:\n%s", args, s)
		}
	}
}

// TestVersion: version and --version print the build, the commit line,
// the Go version and the linked DuckDB's version.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("lakehouse %v: exit %d: %s", args, code, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "lakehouse ") || !strings.HasPrefix(lines[1], "commit  ") ||
			lines[2] != "go      "+runtime.Version() || !strings.HasPrefix(lines[3], "duckdb  v1.") {
			t.Errorf("lakehouse %v printed:\n%s", args, out.String())
		}
	}
}

// TestSystemdChecksRunFlags: the run flags written into ExecStart are
// parsed as run parses them, and --data places the service's directory.
func TestSystemdChecksRunFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--", "--refrsh", "10m"}, "flag provided but not defined: -refrsh"},
		{[]string{"--", "--trigger", "0"}, "--trigger 0s: want a positive duration"},
		{[]string{"--", "--data", "/x"}, `--data after "--"`},
		{[]string{"--", "--retention", "72h", "stray"}, `unexpected argument "stray"`},
		{[]string{"--retention", "72h"}, "flag provided but not defined: -retention"},
		{[]string{"72h"}, `run's flags go after "--"`},
		{[]string{"--data", "lake"}, "want an absolute path"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"systemd"}, tc.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("systemd %v: exit %d, stdout %d bytes, stderr %q; want exit 2, no unit and %q", tc.args, code, out.Len(), errb.String(), tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--data", "/var/lib/lh/a", "--", "--refresh", "10m"},
			[]string{"ExecStart=/usr/local/bin/lakehouse run --data /var/lib/lh/a --http 127.0.0.1:8080 --refresh 10m", "DynamicUser=yes", "StateDirectory=lh/a\n", "WorkingDirectory=/var/lib/lh/a\n"}},
		{[]string{"--data", "/srv/lake", "--user", "lh"},
			[]string{"ExecStart=/usr/local/bin/lakehouse run --data /srv/lake --http 127.0.0.1:8080\n", "User=lh\n", "ReadWritePaths=/srv/lake\n", "WorkingDirectory=/srv/lake\n"}},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"systemd"}, tc.args...), &out, &errb); code != 0 {
			t.Fatalf("systemd %v: exit %d: %s", tc.args, code, errb.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("systemd %v: unit lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		if strings.Contains(tc.args[1], "/srv") && strings.Contains(out.String(), "DynamicUser=yes") {
			t.Errorf("systemd %v: a dynamic user cannot own %s", tc.args, tc.args[1])
		}
	}
}

// TestQueryTimeoutWithinTheLease: a query may not run longer than the lease
// that keeps its snapshots' files beside a running appliance; a --timeout
// past it is refused before anything is opened.
func TestQueryTimeoutWithinTheLease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	var out, errb bytes.Buffer
	code := run([]string{"query", "--data", dir, "--timeout", "8h", "SELECT 1"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--timeout 8h0m0s: at most 5h59m0s") {
		t.Errorf("query --timeout 8h: exit %d, stderr %q; want exit 2 and the bound named", code, errb.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("query made %s (%v)", dir, err)
	}
}
