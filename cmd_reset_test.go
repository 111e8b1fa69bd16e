package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"lakehouse/broker"
	"lakehouse/ingest"
)

// TestResetPositionCommand: `lakehouse reset-position` takes exactly one of
// --to, --since, --latest, refuses an id that cannot be sent and refuses
// while another process (the appliance) holds the broker, and otherwise
// stores the position (and clears the since time, or sets it) in the broker.
func TestResetPositionCommand(t *testing.T) {
	dir := t.TempDir()
	cmd := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"reset-position", "--data", dir}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, stderr := cmd("--latest"); code != 1 || !strings.Contains(stderr, "no broker") {
		t.Errorf("without a broker: exit %d, %q; want 1 and no broker", code, stderr)
	}
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The appliance (here: this open broker) holds the file lock.
	if code, _, stderr := cmd("--latest"); code != 1 || !strings.Contains(stderr, "stop it first") {
		t.Errorf("while the broker is held: exit %d, %q; want 1 and stop it first", code, stderr)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	meta := func(key string) string {
		t.Helper()
		db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		v, err := db.Meta(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	pos, since := ingest.MetaKey(ingest.DefaultSource), ingest.SinceKey(ingest.DefaultSource)
	const id = `[{"topic":"eqiad.mediawiki.recentchange","partition":0,"timestamp":1772120977001}]`
	for _, tc := range []struct {
		args       []string
		code       int
		pos, since string
	}{
		{nil, 2, "", ""},
		{[]string{"--to", id, "--latest"}, 2, "", ""},
		{[]string{"--since", "yesterday"}, 2, "", ""},
		{[]string{"--to", "a\x01b"}, 1, "", ""},
		{[]string{"--to", id}, 0, id, ""},
		{[]string{"--since", "2026-12-01T10:00:00Z"}, 0, "", "2026-12-01T10:00:00Z"},
		{[]string{"--latest"}, 0, "", ""},
	} {
		code, stdout, stderr := cmd(tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit %d (%s%s), want %d", tc.args, code, stdout, stderr, tc.code)
			continue
		}
		if code != 0 {
			continue
		}
		if got := meta(pos); got != tc.pos {
			t.Errorf("%q: position %q, want %q", tc.args, got, tc.pos)
		}
		if got := meta(since); got != tc.since {
			t.Errorf("%q: since %q, want %q", tc.args, got, tc.since)
		}
		if !strings.Contains(stdout, "resume position of "+ingest.DefaultSource) {
			t.Errorf("%q: output %q", tc.args, stdout)
		}
	}
}
