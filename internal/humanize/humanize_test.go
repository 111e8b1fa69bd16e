package humanize

import "testing"

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
