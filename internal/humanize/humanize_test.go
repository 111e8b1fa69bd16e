package humanize

import (
	"math"
	"testing"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {20400, "20,400"}, {1234567, "1,234,567"}, {-1500, "-1,500"}} {
		if got := Count(tc.n); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 20 << 20: "20.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d): got %q, want %q", n, got, want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[float64]string{0: "0.00 s", 0.52: "0.52 s", 9.994: "9.99 s", 42.4: "42 s", 60: "1 min", 185: "3 min 5 s",
		3599.6: "1 h", 10980: "3 h 3 min", 86400: "1 d", 187200: "2 d 4 h", -2: "-2.00 s", math.NaN(): "—"} {
		if got := Seconds(in); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestShellJoin: a line a POSIX shell reads back as the same arguments:
// safe words as they are, anything else single-quoted, a quote inside
// closed, escaped and reopened.
func TestShellJoin(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--data", "/var/lib/x"}, "run --data /var/lib/x"},
		{[]string{"query", "SELECT 1"}, "query 'SELECT 1'"},
		{[]string{""}, "''"},
		{[]string{"it's"}, `'it'\''s'`},
		{[]string{"a$b", "c;d"}, "'a$b' 'c;d'"},
	} {
		if got := ShellJoin(tc.args); got != tc.want {
			t.Errorf("ShellJoin(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
