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

// editor is one (wiki, user) with its open sessions, ordered by Start.
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

// add puts e into its editor's sessions, merging every open session that
// lies within gap of it.
func (s *state) add(e edit, gap time.Duration) {
	k := editorKey(e.Wiki, e.User)
	ed := s.Editors[k]
	if ed == nil {
		ed = &editor{Wiki: e.Wiki, User: e.User}
		s.Editors[k] = ed
	}
	n := &session{Start: e.At, End: e.At, Edits: 1, Pages: map[string]struct{}{e.Title: {}}, Bot: e.Bot}
	if e.Delta > 0 {
		n.Added = e.Delta
	} else {
		n.Removed = -e.Delta
	}
	g := gap.Microseconds()
	kept := ed.Sessions[:0:0]
	for _, o := range ed.Sessions {
		if o.Start-g <= e.At && e.At <= o.End+g {
			n.Start, n.End = min(n.Start, o.Start), max(n.End, o.End)
			n.Edits += o.Edits
			n.Added += o.Added
			n.Removed += o.Removed
			n.Bot = n.Bot || o.Bot
			for p := range o.Pages {
				n.Pages[p] = struct{}{}
			}
			continue
		}
		kept = append(kept, o)
	}
	i := sort.Search(len(kept), func(i int) bool { return kept[i].Start > n.Start })
	ed.Sessions = slices.Insert(kept, i, n)
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
