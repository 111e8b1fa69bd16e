package sessions

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// session is one open (not yet emitted) session of an editor.
type session struct {
	Start   int64               `json:"start"` // Unix µs of the first edit
	End     int64               `json:"end"`   // Unix µs of the last edit
	Edits   int64               `json:"edits"`
	Pages   map[string]struct{} `json:"-"`
	Added   int64               `json:"added"`
	Removed int64               `json:"removed"`
	Bot     bool                `json:"bot"`
	// PageList is Pages, sorted, in the encoded state.
	PageList []string `json:"pages"`
}

// editor is one (wiki, user) with its open sessions, ordered by Start
// (they do not overlap, so their Ends are ordered too).
type editor struct {
	Wiki     string     `json:"wiki"`
	User     string     `json:"user"`
	Sessions []*session `json:"sessions"`
}

// state is the open sessions after batch version.
type state struct {
	Version   int64              `json:"version"`
	MaxEvent  int64              `json:"max_event"`
	Watermark int64              `json:"watermark"`
	Editors   map[string]*editor `json:"-"`
	// EditorList is Editors sorted by key, in the encoded state.
	EditorList []*editor `json:"editors"`
}

func newState(version int64) *state {
	return &state{Version: version, MaxEvent: noTime, Watermark: noTime, Editors: map[string]*editor{}}
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
		ed = &editor{Wiki: e.Wiki, User: e.User}
		s.Editors[k] = ed
	}
	g := gap.Microseconds()
	ss := ed.Sessions
	// Open sessions are ordered by Start and do not overlap (any two are
	// more than the gap apart), so their Ends are ordered too, and the
	// sessions within gap of e are the run ss[lo:hi]: those before lo end
	// more than gap before e, those from hi start more than gap after.
	lo := sort.Search(len(ss), func(i int) bool { return ss[i].End+g >= e.At })
	hi := lo
	for hi < len(ss) && ss[hi].Start-g <= e.At {
		hi++
	}
	switch hi - lo {
	case 0:
		n := &session{Start: e.At, End: e.At, Pages: map[string]struct{}{}}
		n.apply(e)
		ed.Sessions = slices.Insert(ss, lo, n)
	case 1:
		ss[lo].apply(e)
	default:
		into := ss[lo]
		for _, o := range ss[lo+1 : hi] {
			if len(o.Pages) > len(into.Pages) {
				into = o
			}
		}
		for _, o := range ss[lo:hi] {
			if o != into {
				into.absorb(o)
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
	ss.Pages[e.Title] = struct{}{}
}

// absorb merges o's edits into ss.
func (ss *session) absorb(o *session) {
	ss.Start, ss.End = min(ss.Start, o.Start), max(ss.End, o.End)
	ss.Edits += o.Edits
	ss.Added += o.Added
	ss.Removed += o.Removed
	ss.Bot = ss.Bot || o.Bot
	for p := range o.Pages {
		ss.Pages[p] = struct{}{}
	}
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
				continue
			}
			kept = append(kept, ss)
		}
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

// encode renders the state as canonical JSON (editors and pages sorted).
func (s *state) encode() ([]byte, error) {
	keys := make([]string, 0, len(s.Editors))
	for k := range s.Editors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s.EditorList = s.EditorList[:0]
	for _, k := range keys {
		ed := s.Editors[k]
		for _, ss := range ed.Sessions {
			ss.PageList = ss.PageList[:0]
			for p := range ss.Pages {
				ss.PageList = append(ss.PageList, p)
			}
			sort.Strings(ss.PageList)
		}
		s.EditorList = append(s.EditorList, ed)
	}
	b, err := json.Marshal(s)
	s.EditorList = nil
	if err != nil {
		return nil, fmt.Errorf("encode session state: %w", err)
	}
	return b, nil
}

func decodeState(b []byte) (*state, error) {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode session state: %w: %v", ErrCorruptState, err)
	}
	s.Editors = make(map[string]*editor, len(s.EditorList))
	for _, ed := range s.EditorList {
		if ed == nil || len(ed.Sessions) == 0 || strings.Contains(ed.Wiki, "\x00") {
			return nil, fmt.Errorf("decode session state %d: %w: bad editor entry", s.Version, ErrCorruptState)
		}
		for _, ss := range ed.Sessions {
			ss.Pages = make(map[string]struct{}, len(ss.PageList))
			for _, p := range ss.PageList {
				ss.Pages[p] = struct{}{}
			}
			ss.PageList = nil
		}
		s.Editors[editorKey(ed.Wiki, ed.User)] = ed
	}
	s.EditorList = nil
	return &s, nil
}
