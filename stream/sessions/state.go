package sessions

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"sort"
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
	Pages   pageSet

	// What the batch in progress did to the session, for its delta
	// (state.dirty lists the editors whose sessions to look at).
	fresh bool          // created by this batch: the delta carries it whole
	d     *sessionDelta // an earlier session this batch changed in place (touched); nil otherwise
}

// sessionDelta is what the batch in progress did to an earlier session.
// It lives only until the batch's state is saved, so an open session does
// not carry its fields for the rest of its life.
type sessionDelta struct {
	base  int64    // Start before this batch, the session's key
	added []pageID // the pages this batch added
}

// touched reports whether ss is an earlier session this batch changed.
func (ss *session) touched() bool { return ss.d != nil }

// held is an edit as a session takes it in: an on-time edit held back
// until the watermark passes it (see state.add), or one being folded; its
// editor is implied.
type held struct {
	At, Delta int64
	Bot       bool
	Page      pageID
}

// editor is one (wiki, user) with its open sessions.
type editor struct {
	Wiki, User string
	// Sessions are ordered by Start and do not overlap, so their Ends are
	// ordered too. Two are more than the gap apart, or the later one began
	// because the earlier reached the maximum length.
	Sessions []*session
	// Held are the editor's held-back edits, ordered by At.
	Held []held

	// d is what the batch in progress did to the editor; non-nil exactly
	// while the editor is in state.dirty.
	d *editorDelta
}

// editorDelta is what the batch in progress did to an editor, for its
// delta. Only the editors a batch changed have one, so an open session's
// editor does not carry these fields between batches; state recycles them.
type editorDelta struct {
	removed []int64 // keys (Starts before this batch) of earlier sessions this batch removed
	folded  int     // held edits of the version before that this batch folded
	all     bool    // ... all of them, not only those below the watermark
	newHeld []held  // edits this batch held back (and still holds)
}

// state is the open sessions after batch Version.
type state struct {
	Version   int64 // batch the state is after; -1 before the first
	MaxEvent  int64 // newest event time seen, Unix µs, or noTime
	Watermark int64 // watermark batch Version used, Unix µs, or noTime
	Editors   map[string]*editor

	holding  map[*editor]struct{} // editors with held edits
	dirty    []*editor            // editors batch Version changed (some may have left Editors)
	spare    []*editorDelta       // deltas of earlier batches, for reuse
	tracked  bool                 // dirty and the sessions' marks describe batch Version
	lastFull int64                // newest version saved (or loaded) as a full snapshot; -1 none
	units    int                  // units (see pendingUnits) saved in deltas since lastFull
}

func newState(version int64) *state {
	return &state{Version: version, MaxEvent: noTime, Watermark: noTime, Editors: map[string]*editor{},
		holding: map[*editor]struct{}{}, lastFull: -1}
}

func editorKey(wiki, user string) string { return wiki + "\x00" + user }

// newEditor is the editor of key (editorKey(wiki, user)); its Wiki and
// User share key's bytes, so an editor costs one copy of its name, the
// state map's key.
func newEditor(key, wiki string) *editor {
	return &editor{Wiki: key[:len(wiki)], User: key[len(wiki)+1:]}
}

// edit is one silver row as sessions sees it.
type edit struct {
	Wiki, User, Title string
	Bot               bool
	At                int64 // Unix µs
	Delta             int64
}

// The sessions are those of walking each editor's on-time edits in event
// time: an edit continues the current session when it is at most gap
// after the session's last edit and at most max (the maximum length) after
// its first, and starts a new session otherwise. Edits arrive out of
// order, so the state cannot simply walk them; it keeps the result exact
// this way (delay is how far the batch's watermark trails the newest event
// time seen before it, at most WatermarkDelay, which max exceeds):
//
//   - Within a batch the processor adds edits in event time, so an edit e
//     that arrives out of order comes from a later batch and is at or
//     above that batch's watermark, while every edit folded before is at
//     most the newest event time seen: every folded edit later than e lies
//     within (e, e+delay].
//   - While no open session of the editor starts more than max before e or
//     before the editor's newest folded edit, no session can reach the
//     maximum among these edits and the order does not matter: e joins the
//     session it falls in or next to, merging two it bridges (fold), as
//     plain gap sessions do; a session that e starts ends, for now, within
//     delay of it, so the condition still holds after e.
//   - Otherwise e is held back, and so is every later edit of the editor,
//     until the watermark passes each: then no earlier edit can still
//     arrive, and held edits are folded in event time, where the split is
//     the walk's own. The edits folded before the editor began holding all
//     lie within max of every session then open, and within delay of every
//     session started since, so no fold ever has to cut a session in two.
//     Once no open session of the editor is near the maximum any more (the
//     one that was has been emitted), the editor folds what it still holds
//     and stops holding.
//
// Held edits are state (saved in state files). On the real stream they are
// the last few minutes (delay) of edits of the editors whose session passed
// the maximum, during the gap plus delay that session then stays open;
// editors far from the maximum hold nothing.

// add puts e into its editor's sessions (fold), or holds it back when the
// editor holds edits or one of its open sessions is near maxLen.
func (s *state) add(e edit, gap time.Duration, maxLen int64) {
	k := editorKey(e.Wiki, e.User)
	ed := s.Editors[k]
	if ed == nil {
		// k is a new string: e's strings point into the batch's Arrow
		// buffers, which the state would otherwise keep alive for as long
		// as it holds the editor.
		ed = newEditor(k, e.Wiki)
		s.Editors[k] = ed
	}
	s.markDirty(ed)
	h := held{At: e.At, Delta: e.Delta, Bot: e.Bot, Page: pageOf(e.Title)}
	if len(ed.Held) > 0 || ed.nearMax(e.At, maxLen) {
		i := sort.Search(len(ed.Held), func(i int) bool { return ed.Held[i].At > e.At })
		ed.Held = slices.Insert(ed.Held, i, h)
		ed.d.newHeld = append(ed.d.newHeld, h)
		s.holding[ed] = struct{}{}
		return
	}
	ed.fold(h, gap.Microseconds(), maxLen)
}

// nearMax reports whether an open session of ed starts more than maxLen
// before at or before ed's newest folded edit.
func (ed *editor) nearMax(at, maxLen int64) bool {
	ss := ed.Sessions
	if len(ss) == 0 {
		return false
	}
	return at-ss[0].Start > maxLen || ss[len(ss)-1].End-ss[0].Start > maxLen
}

// release folds the held edits the watermark wm passed, in event time, and
// then the rest too if no open session is near the maximum any more.
func (s *state) release(wm int64, gap time.Duration, maxLen int64) {
	g := gap.Microseconds()
	for ed := range s.holding {
		n := 0
		if wm != noTime {
			n = sort.Search(len(ed.Held), func(i int) bool { return ed.Held[i].At >= wm })
		}
		if n > 0 {
			s.markDirty(ed) // before folding: a fold records what it merges away
		}
		for _, h := range ed.Held[:n] {
			ed.fold(h, g, maxLen)
		}
		if n < len(ed.Held) && !ed.nearMax(ed.Held[len(ed.Held)-1].At, maxLen) {
			s.markDirty(ed)
			for _, h := range ed.Held[n:] {
				ed.fold(h, g, maxLen)
			}
			n, ed.d.all = len(ed.Held), true
		}
		if n == 0 {
			continue
		}
		ed.d.folded = n
		rest := copy(ed.Held, ed.Held[n:])
		clear(ed.Held[rest:])
		ed.Held = ed.Held[:rest]
		if rest == 0 {
			ed.Held = nil
			delete(s.holding, ed)
		}
	}
}

// fold puts e into ed's sessions: into the session it falls in; else
// after the session before it when e is at most gap after its end and
// maxLen after its start, also merging the session after it when that is
// within gap of e and ends at most maxLen after the merged start; else
// before the session after it, moving its start, when e is at most gap
// before it and maxLen before its end; else into a new session.
// A merge keeps the session with the most pages and copies the other's
// pages into it, so the copying over a session's life is O(n log n) in its
// pages; the sessions are found by binary search.
func (ed *editor) fold(e held, g, maxLen int64) {
	ss := ed.Sessions
	i := sort.Search(len(ss), func(i int) bool { return ss[i].End >= e.At })
	if i < len(ss) && ss[i].Start <= e.At {
		ss[i].touch()
		ss[i].apply(e)
		return
	}
	var prev, next *session // prev.End < e.At < next.Start
	if i > 0 {
		prev = ss[i-1]
	}
	if i < len(ss) {
		next = ss[i]
	}
	nearNext := next != nil && next.Start-e.At <= g
	switch {
	case prev != nil && e.At-prev.End <= g && e.At-prev.Start <= maxLen:
		if !nearNext || next.End-prev.Start > maxLen {
			prev.touch()
			prev.apply(e)
			return
		}
		into, from := prev, next
		if next.Pages.len() > prev.Pages.len() {
			into, from = next, prev
		}
		into.touch()
		into.absorb(from)
		ed.drop(from)
		into.apply(e)
		ed.Sessions = slices.Replace(ss, i-1, i+1, into)
	case nearNext && next.End-e.At <= maxLen:
		next.touch()
		next.apply(e)
	default:
		n := &session{Start: e.At, End: e.At, fresh: true}
		n.apply(e)
		ed.Sessions = slices.Insert(ss, i, n)
	}
}

// apply adds one edit to ss.
func (ss *session) apply(e held) {
	ss.Start, ss.End = min(ss.Start, e.At), max(ss.End, e.At)
	ss.Edits++
	if e.Delta > 0 {
		ss.Added += e.Delta
	} else {
		ss.Removed -= e.Delta
	}
	ss.Bot = ss.Bot || e.Bot
	ss.addPage(e.Page)
}

// absorb merges o's edits into ss.
func (ss *session) absorb(o *session) {
	ss.Start, ss.End = min(ss.Start, o.Start), max(ss.End, o.End)
	ss.Edits += o.Edits
	ss.Added += o.Added
	ss.Removed += o.Removed
	ss.Bot = ss.Bot || o.Bot
	for p := range o.Pages.all() {
		ss.addPage(p)
	}
}

func (ss *session) addPage(p pageID) {
	if !ss.Pages.add(p) {
		return
	}
	if ss.d != nil {
		ss.d.added = append(ss.d.added, p)
	}
}

// touch marks an earlier session as changed by this batch, keeping its key.
func (ss *session) touch() {
	if !ss.fresh && ss.d == nil {
		ss.d = &sessionDelta{base: ss.Start}
	}
}

// drop records that this batch removed ss from ed (merged away or
// emitted); a session the batch created leaves no trace in the delta.
func (ed *editor) drop(ss *session) {
	switch {
	case ss.fresh:
	case ss.d != nil:
		ed.d.removed = append(ed.d.removed, ss.d.base)
	default:
		ed.d.removed = append(ed.d.removed, ss.Start)
	}
}

// markDirty gives ed a delta for the batch in progress (and lists it in
// s.dirty) unless it has one; everything that records into ed.d calls it
// first.
func (s *state) markDirty(ed *editor) {
	if ed.d != nil {
		return
	}
	if n := len(s.spare); n > 0 {
		ed.d, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		ed.d = &editorDelta{}
	}
	s.dirty = append(s.dirty, ed)
}

// maxSpareHeld bounds the held-edit capacity a recycled editorDelta keeps,
// and maxSpare how many the state keeps, so one large batch does not stay
// allocated for good.
const (
	maxSpareHeld = 256
	maxSpare     = 1024
)

// resetDelta forgets what the previous batch changed; it costs what that
// batch changed, not the size of the state.
func (s *state) resetDelta() {
	for _, ed := range s.dirty {
		for _, ss := range ed.Sessions {
			ss.fresh, ss.d = false, nil
		}
		d := ed.d
		ed.d = nil
		d.removed, d.folded, d.all, d.newHeld = d.removed[:0], 0, false, d.newHeld[:0] // held has no pointers: nothing to clear
		if cap(d.newHeld) > maxSpareHeld {
			d.newHeld = nil
		}
		if len(s.spare) < maxSpare {
			s.spare = append(s.spare, d)
		}
	}
	clear(s.dirty)
	s.dirty, s.tracked = s.dirty[:0], false
}

// pendingUnits measures batch Version's delta: one unit per session
// created, updated or removed, one per page it carries and one per edit
// held back.
func (s *state) pendingUnits() int {
	n := 0
	for _, ed := range s.dirty {
		n += len(ed.d.removed) + len(ed.d.newHeld)
		for _, ss := range ed.Sessions {
			switch {
			case ss.fresh:
				n += 1 + ss.Pages.len()
			case ss.d != nil:
				n += 1 + len(ss.d.added)
			}
		}
	}
	return n
}

// liveUnits measures a full snapshot the way pendingUnits measures a delta.
func (s *state) liveUnits() int {
	n := 0
	for _, ed := range s.Editors {
		n += len(ed.Held)
		for _, ss := range ed.Sessions {
			n += 1 + ss.Pages.len()
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
		if len(kept) == 0 && len(ed.Held) == 0 {
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

// StateVersion is the batch the state is after (stream.EventState).
func (s *state) StateVersion() int64 { return s.Version }

// Clock is the watermark of that batch and the newest event time seen
// (stream.EventState).
func (s *state) Clock() (watermark, maxEvent int64) { return s.Watermark, s.MaxEvent }
