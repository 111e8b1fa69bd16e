package verify

import (
	"fmt"
	"sort"
	"strings"

	"lakehouse/internal/humanize"
	"lakehouse/internal/observe"
)

// drainNote is what a drain waits on, shortest first for a bar that a
// terminal's width cuts: "bronze lag 0, silver lag 500; broker 20,500 of
// 20,500; batches bronze 41, silver 39".
func drainNote(s observe.Status, want int64) string {
	names := make([]string, 0, len(s.Queries))
	for n := range s.Queries {
		names = append(names, n)
	}
	sort.Strings(names)
	lags := make([]string, len(names))
	batches := make([]string, len(names))
	for i, n := range names {
		lags[i] = fmt.Sprintf("%s lag %s", n, humanize.Count(s.Queries[n].Lag))
		batches[i] = fmt.Sprintf("%s %d", n, s.Queries[n].Batch)
	}
	return fmt.Sprintf("%s; broker %s of %s; batches %s", strings.Join(lags, ", "),
		humanize.Count(s.Stored(DefaultTopic)), humanize.Count(want), strings.Join(batches, ", "))
}
