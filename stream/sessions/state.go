package sessions

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
	"time"
)

// session is one open (not yet emitted) session of an editor.
type session struct {
	Start   int64 // Unix µs of the first edit
	End     int64 // Unix µs of the last edit
	Edits   int64
	Added   int64
	Removed int64
	Bot     bool
	Pages   map[string]struct{}

	// What the batch in progress did to the session, for its delta
	// (state.dirty lists the editors whose sessions to look at).
	fresh   bool     // created by this batch: the delta carries it whole
	touched bool     // an earlier session this batch changed in place
	base    int64    // when touched: Start before this batch, its key
	added   []string // when touched: the pages this batch added
}

// editor is one (wiki, user) with its open sessions.
type editor struct {
	Wiki, User string
	// Sessions are ordered by Start and do not overlap (any two are more
	// than the gap apart), so their Ends are ordered too.
	Sessions []*session

	dirty   bool    // in state.dirty
	removed []int64 // keys (Starts before this batch) of earlier sessions this batch removed
}

// state is the open sessions after batch Version.
type state struct {
	Version   int64 // batch the state is after; -1 before the first
	MaxEvent  int64 // newest event time seen, Unix µs, or noTime
	Watermark int64 // watermark batch Version used, Unix µs, or noTime
	Editors   map[string]*editor

	dirty    []*editor // editors batch Version changed (some may have left Editors)
	tracked  bool      // dirty and the sessions' marks describe batch Version
	lastFull int64     // newest version saved (or loaded) as a full snapshot; -1 none
	units    int       // units (see pendingUnits) saved in deltas since lastFull
}

func newState(version int64) *state {
	return &state{Version: version, MaxEvent: noTime, Watermark: noTime, Editors: map[string]*editor{}, lastFull: -1}
}

func editorKey(wiki, user string) string { return wiki + "\x00" + user }

// edit is one silver row as sessions sees it.
type edit struct {
	Wiki, User, Title string
	Bot               bool
	At                int64 // Unix µs
	Delta             int64
}

// add puts e into its editor's sessions: a new session when no open one
// lies within gap of it, that session extended in place when one does, and
// when several do (e bridges them) all of them merged into the one with the
// most pages, the others' pages copied into it. A page is only copied into
// a set at least as large as its own, so the copying over a session's life
// is O(n log n) in its pages; the editor's sessions are found by binary
// search.
func (s *state) add(e edit, gap time.Duration) {
	k := editorKey(e.Wiki, e.User)
	ed := s.Editors[k]
	if ed == nil {
		// Copies: e's strings point into the batch's Arrow buffers, which
		// the state would otherwise keep alive for as long as it holds them.
		ed = &editor{Wiki: strings.Clone(e.Wiki), User: strings.Clone(e.User)}
		s.Editors[k] = ed // k is a new string
	}
	s.markDirty(ed)
	g := gap.Microseconds()
	ss := ed.Sessions
	// The sessions within gap of e are the run ss[lo:hi]: those before lo
	// end more than gap before e, those from hi start more than gap after.
	lo := sort.Search(len(ss), func(i int) bool { return ss[i].End+g >= e.At })
	hi := lo
	for hi < len(ss) && ss[hi].Start-g <= e.At {
		hi++
	}
	switch hi - lo {
	case 0:
		n := &session{Start: e.At, End: e.At, Pages: map[string]struct{}{}, fresh: true}
		n.apply(e)
		ed.Sessions = slices.Insert(ss, lo, n)
	case 1:
		ss[lo].touch()
		ss[lo].apply(e)
	default:
		into := ss[lo]
		for _, o := range ss[lo+1 : hi] {
			if len(o.Pages) > len(into.Pages) {
				into = o
			}
		}
		into.touch()
		for _, o := range ss[lo:hi] {
			if o != into {
				into.absorb(o)
				ed.drop(o)
			}
		}
		into.apply(e)
		ed.Sessions = slices.Replace(ss, lo, hi, into)
	}
}

// apply adds one edit to ss.
func (ss *session) apply(e edit) {
	ss.Start, ss.End = min(ss.Start, e.At), max(ss.End, e.At)
	ss.Edits++
	if e.Delta > 0 {
		ss.Added += e.Delta
	} else {
		ss.Removed -= e.Delta
	}
	ss.Bot = ss.Bot || e.Bot
	ss.addPage(e.Title)
}

// absorb merges o's edits into ss.
func (ss *session) absorb(o *session) {
	ss.Start, ss.End = min(ss.Start, o.Start), max(ss.End, o.End)
	ss.Edits += o.Edits
	ss.Added += o.Added
	ss.Removed += o.Removed
	ss.Bot = ss.Bot || o.Bot
	for p := range o.Pages {
		ss.addPage(p)
	}
}

func (ss *session) addPage(p string) {
	if _, ok := ss.Pages[p]; ok {
		return
	}
	p = strings.Clone(p) // not a view of the batch's Arrow buffer (see add)
	ss.Pages[p] = struct{}{}
	if ss.touched {
		ss.added = append(ss.added, p)
	}
}

// touch marks an earlier session as changed by this batch, keeping its key.
func (ss *session) touch() {
	if !ss.fresh && !ss.touched {
		ss.touched, ss.base = true, ss.Start
	}
}

// drop records that this batch removed ss from ed (merged away or
// emitted); a session the batch created leaves no trace in the delta.
func (ed *editor) drop(ss *session) {
	switch {
	case ss.fresh:
	case ss.touched:
		ed.removed = append(ed.removed, ss.base)
	default:
		ed.removed = append(ed.removed, ss.Start)
	}
}

func (s *state) markDirty(ed *editor) {
	if !ed.dirty {
		ed.dirty = true
		s.dirty = append(s.dirty, ed)
	}
}

// resetDelta forgets what the previous batch changed; it costs what that
// batch changed, not the size of the state.
func (s *state) resetDelta() {
	for _, ed := range s.dirty {
		for _, ss := range ed.Sessions {
			ss.fresh, ss.touched, ss.base, ss.added = false, false, 0, ss.added[:0]
		}
		ed.dirty, ed.removed = false, ed.removed[:0]
	}
	clear(s.dirty)
	s.dirty, s.tracked = s.dirty[:0], false
}

// pendingUnits measures batch Version's delta: one unit per session
// created, updated or removed, and one per page it carries.
func (s *state) pendingUnits() int {
	n := 0
	for _, ed := range s.dirty {
		n += len(ed.removed)
		for _, ss := range ed.Sessions {
			switch {
			case ss.fresh:
				n += 1 + len(ss.Pages)
			case ss.touched:
				n += 1 + len(ss.added)
			}
		}
	}
	return n
}

// liveUnits measures a full snapshot the way pendingUnits measures a delta.
func (s *state) liveUnits() int {
	n := 0
	for _, ed := range s.Editors {
		for _, ss := range ed.Sessions {
			n += 1 + len(ss.Pages)
		}
	}
	return n
}

// closed is an emitted session.
type closed struct {
	ID         string
	Wiki, User string
	*session
}

// close removes and returns the sessions whose last edit plus gap is below
// wm, ordered by (start, wiki, user).
func (s *state) close(wm int64, gap time.Duration) []closed {
	if wm == noTime {
		return nil
	}
	g := gap.Microseconds()
	var out []closed
	for k, ed := range s.Editors {
		kept := ed.Sessions[:0]
		for _, ss := range ed.Sessions {
			if ss.End+g < wm {
				out = append(out, closed{ID: sessionID(ed.Wiki, ed.User, ss.Start), Wiki: ed.Wiki, User: ed.User, session: ss})
				s.markDirty(ed)
				ed.drop(ss)
				continue
			}
			kept = append(kept, ss)
		}
		clear(ed.Sessions[len(kept):])
		ed.Sessions = kept
		if len(kept) == 0 {
			delete(s.Editors, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.Wiki != b.Wiki {
			return a.Wiki < b.Wiki
		}
		return a.User < b.User
	})
	return out
}

// sessionID is hex(SHA-256(wiki NUL user NUL start µs big-endian)[:16]).
func sessionID(wiki, user string, start int64) string {
	h := sha256.New()
	h.Write([]byte(wiki))
	h.Write([]byte{0})
	h.Write([]byte(user))
	h.Write([]byte{0})
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(start))
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}
