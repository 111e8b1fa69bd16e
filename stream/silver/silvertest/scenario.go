package silvertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// Base is the start of the scenarios' event time.
var Base = time.Date(2026, 2, 26, 15, 0, 0, 0, time.UTC)

// Event describes one generated recentchange event.
type Event struct {
	ID    string
	Type  string // edit (default), new, log, categorize
	At    time.Time
	User  string
	Wiki  string
	Title string
	Old   int64 // length.old (edit only)
	New   int64 // length.new
	Bot   bool
}

// UUID makes a deterministic version-4 UUID from n.
func UUID(n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
}

// JSON renders e as the wire does (null fields omitted).
func (e Event) JSON() []byte {
	if e.Type == "" {
		e.Type = "edit"
	}
	if e.User == "" {
		e.User = "Alice"
	}
	if e.Wiki == "" {
		e.Wiki = "enwiki"
	}
	if e.Title == "" {
		e.Title = "Page " + e.ID[:8]
	}
	if e.New == 0 {
		e.New = 1000
	}
	m := map[string]any{
		"$schema": "/mediawiki/recentchange/1.0.0",
		"meta": map[string]any{"id": e.ID, "dt": e.At.Add(1500 * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z"),
			"domain": "example.org", "stream": "mediawiki.recentchange"},
		"id": 42, "type": e.Type, "namespace": 0, "title": e.Title, "comment": "c",
		"timestamp": e.At.Unix(), "user": e.User, "bot": e.Bot, "server_name": e.Wiki + ".example.org", "wiki": e.Wiki,
	}
	switch e.Type {
	case "edit":
		m["minor"] = false
		m["length"] = map[string]any{"old": e.Old, "new": e.New}
		m["revision"] = map[string]any{"old": 100, "new": 101}
	case "new":
		m["minor"] = false
		m["length"] = map[string]any{"new": e.New}
		m["revision"] = map[string]any{"new": 101}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// Delta is the event's byte delta as silver computes it.
func (e Event) Delta() int64 {
	if e.Type == "new" {
		return e.New
	}
	return e.New - e.Old
}

// Kind says what silver must do with an event of the scenario.
type Kind int

const (
	Fresh  Kind = iota // a new edit/new event, on time: lands in silver once
	Resend             // the same bytes as an earlier Fresh event: a duplicate
	Late               // a new edit/new event stamped 30 minutes back: late
	Other              // log/categorize: filtered out
)

// Item is one bronze row of a scenario.
type Item struct {
	Event Event
	Kind  Kind
}

// Scenario is a sequence of bronze snapshots. Every snapshot's events are
// stamped Spacing after the previous snapshot's, so with one snapshot per
// silver batch the watermark (newest event time minus Delay) makes the Kind
// of every event exact whatever the batch boundaries in time.
type Scenario struct {
	Snapshots [][]Item
	Delay     time.Duration // the silver watermark delay the kinds assume
	// Flusher is the editor of the two last snapshots, stamped hours after
	// the rest so that the watermark closes every other session.
	FlusherWiki, FlusherUser string
}

// Generate makes a scenario of n snapshots (plus the two flusher snapshots)
// of per events each: about 10% resends (of the same or the previous
// snapshot), 5% late events (from the second snapshot on), 20% log and
// categorize events, the rest fresh edit and new events by a pool of
// editors, some of whom pause long enough to start new sessions.
func Generate(seed int64, n, per int, delay time.Duration) Scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5111))
	const spacing = 2 * time.Minute
	s := Scenario{Delay: delay, FlusherWiki: "zzwiki", FlusherUser: "Flusher"}
	users := []string{"Alice", "Bob", "Carol", "Dave", "Eve", "~2026-1234", "192.0.2.7", "WikiBot"}
	wikis := []string{"enwiki", "dewiki"}
	next := 0
	var prev []Event // fresh events of the previous snapshot
	for k := 0; k < n; k++ {
		t := Base.Add(time.Duration(k) * spacing)
		var snap []Item
		var fresh []Event
		for i := 0; i < per; i++ {
			at := t.Add(time.Duration(r.IntN(60)) * time.Second)
			u := users[r.IntN(len(users))]
			// Dave edits only early and late: his activity has a gap.
			if u == "Dave" && k > n/4 && k < 3*n/4 {
				u = "Carol"
			}
			e := Event{ID: UUID(next), At: at, User: u, Wiki: wikis[r.IntN(len(wikis))], Bot: u == "WikiBot",
				Title: "T" + strconv.Itoa(r.IntN(20)), Old: int64(r.IntN(5000)), New: int64(r.IntN(5000)) + 1}
			x := r.Float64()
			switch {
			case x < 0.10 && len(fresh)+len(prev) > 0:
				pool := append(append([]Event(nil), prev...), fresh...)
				snap = append(snap, Item{pool[r.IntN(len(pool))], Resend})
				continue
			case x < 0.15 && k > 0:
				e.At = t.Add(-30 * time.Minute)
				e.Type = "edit"
				snap = append(snap, Item{e, Late})
			case x < 0.35:
				e.Type = []string{"log", "categorize"}[r.IntN(2)]
				snap = append(snap, Item{e, Other})
			default:
				e.Type = "edit"
				if r.IntN(10) == 0 {
					e.Type = "new"
				}
				snap = append(snap, Item{e, Fresh})
				fresh = append(fresh, e)
			}
			next++
		}
		s.Snapshots = append(s.Snapshots, snap)
		prev = fresh
	}
	end := Base.Add(time.Duration(n)*spacing + 3*time.Hour)
	for i := 0; i < 2; i++ {
		e := Event{ID: UUID(next), Type: "edit", At: end.Add(time.Duration(i) * time.Minute),
			User: s.FlusherUser, Wiki: s.FlusherWiki, Title: "F", New: 10}
		s.Snapshots = append(s.Snapshots, []Item{{e, Fresh}})
		next++
	}
	return s
}

// Count returns how many items of kind the scenario has.
func (s Scenario) Count(kind Kind) int {
	n := 0
	for _, snap := range s.Snapshots {
		for _, it := range snap {
			if it.Kind == kind {
				n++
			}
		}
	}
	return n
}

// Expected returns the events silver must hold: every Fresh event, by id.
func (s Scenario) Expected() map[string]Event {
	out := map[string]Event{}
	for _, snap := range s.Snapshots {
		for _, it := range snap {
			if it.Kind == Fresh {
				out[it.Event.ID] = it.Event
			}
		}
	}
	return out
}

// Session is an expected editor session.
type Session struct {
	Wiki, User     string
	Start, End     time.Time
	Edits, Pages   int64
	Added, Removed int64
	Bot            bool
}

// ExpectedSessions computes the sessions of the expected silver rows with
// gap and maximum length max (none if not positive), leaving out the
// flusher's (still open at the end): each editor's edits walked in event
// time, a new session after more than gap or once the session would last
// more than max.
func (s Scenario) ExpectedSessions(gap, max time.Duration) []Session {
	by := map[[2]string][]Event{}
	for _, e := range s.Expected() {
		if e.Wiki == s.FlusherWiki && e.User == s.FlusherUser {
			continue
		}
		k := [2]string{e.Wiki, e.User}
		by[k] = append(by[k], e)
	}
	var out []Session
	for k, evs := range by {
		sort.Slice(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
		var cur *Session
		pages := map[string]bool{}
		flush := func() {
			if cur != nil {
				cur.Pages = int64(len(pages))
				out = append(out, *cur)
			}
		}
		for _, e := range evs {
			if cur == nil || e.At.Sub(cur.End) > gap || (max > 0 && e.At.Sub(cur.Start) > max) {
				flush()
				cur = &Session{Wiki: k[0], User: k[1], Start: e.At}
				pages = map[string]bool{}
			}
			cur.End = e.At
			cur.Edits++
			pages[e.Title] = true
			if d := e.Delta(); d > 0 {
				cur.Added += d
			} else {
				cur.Removed -= d
			}
			cur.Bot = cur.Bot || e.Bot
		}
		flush()
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		if a.Wiki != b.Wiki {
			return a.Wiki < b.Wiki
		}
		return a.User < b.User
	})
	return out
}

// CommitBronze commits each snapshot of the scenario to table.Bronze as one
// batch of query "bronze" (partition 0, dense offsets), as the bronze query
// would. It is idempotent (the table's marker skips committed batches).
func (s Scenario) CommitBronze(ctx context.Context, lake *table.Lake) error {
	return s.CommitBronzeUpTo(ctx, lake, len(s.Snapshots))
}

// CommitBronzeUpTo commits the first n snapshots (see CommitBronze).
func (s Scenario) CommitBronzeUpTo(ctx context.Context, lake *table.Lake, n int) error {
	var off int64
	for k, snap := range s.Snapshots[:n] {
		rec := bronzeRecord(off, snap)
		off += int64(len(snap))
		_, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{
			Query: "bronze", ID: int64(k), Offsets: fmt.Sprintf(`{"0":%d}`, off), Records: []arrow.RecordBatch{rec},
		})
		rec.Release()
		if err != nil {
			return fmt.Errorf("commit bronze snapshot %d: %w", k, err)
		}
	}
	return nil
}

func bronzeRecord(from int64, items []Item) arrow.RecordBatch {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer rb.Release()
	for i, f := range table.BronzeSchema.Fields() {
		b := rb.Field(i)
		for j, it := range items {
			switch f.Name {
			case "broker_partition":
				b.(*array.Int32Builder).Append(0)
			case "broker_offset":
				b.(*array.Int64Builder).Append(from + int64(j))
			case "broker_ts", "ingest_ts":
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(it.Event.At.Add(2 * time.Second).UnixMicro()))
			case "key":
				b.(*array.StringBuilder).Append(it.Event.ID)
			case "value":
				b.(*array.StringBuilder).Append(string(it.Event.JSON()))
			default:
				panic("unknown bronze column " + f.Name)
			}
		}
	}
	return rb.NewRecordBatch()
}
