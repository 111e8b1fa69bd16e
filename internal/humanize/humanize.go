// Package humanize formats numbers for people (reports, progress lines)
// and command lines they can paste.
package humanize

import (
	"fmt"
	"strconv"
	"strings"
)

// Count formats n with comma thousands separators: 20400 -> "20,400".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Bytes renders a size with a binary unit: 512 B, 1.5 KiB, 20.3 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// Seconds formats a duration in seconds at the precision a reader wants
// at its size: 0.52 -> "0.52 s", 42 -> "42 s", 185 -> "3 min 5 s",
// 10980 -> "3 h 3 min", 187200 -> "2 d 4 h". NaN is "—".
func Seconds(s float64) string {
	switch {
	case s != s:
		return "—"
	case s < 0:
		return "-" + Seconds(-s)
	case s < 10:
		return strconv.FormatFloat(s, 'f', 2, 64) + " s"
	case s < 60:
		return strconv.FormatFloat(s, 'f', 0, 64) + " s"
	}
	n := int64(s + 0.5)
	pair := func(a int64, ua string, b int64, ub string) string {
		if b == 0 {
			return fmt.Sprintf("%d %s", a, ua)
		}
		return fmt.Sprintf("%d %s %d %s", a, ua, b, ub)
	}
	switch {
	case n < 3600:
		return pair(n/60, "min", n%60, "s")
	case n < 86400:
		return pair(n/3600, "h", n%3600/60, "min")
	}
	return pair(n/86400, "d", n%86400/3600, "h")
}
