package sessions

import (
	"encoding/json"
	"fmt"
)

// The JSON state format written before the binary one (statefile.go): a
// full snapshot, editors and pages sorted. It is only read, so that a
// checkpoint written by an older build upgrades with its open sessions.
type legacyState struct {
	Version   int64           `json:"version"`
	MaxEvent  int64           `json:"max_event"`
	Watermark int64           `json:"watermark"`
	Editors   []*legacyEditor `json:"editors"`
}

type legacyEditor struct {
	Wiki     string           `json:"wiki"`
	User     string           `json:"user"`
	Sessions []*legacySession `json:"sessions"`
}

type legacySession struct {
	Start   int64    `json:"start"`
	End     int64    `json:"end"`
	Edits   int64    `json:"edits"`
	Added   int64    `json:"added"`
	Removed int64    `json:"removed"`
	Bot     bool     `json:"bot"`
	Pages   []string `json:"pages"`
}

// isLegacy reports whether b is a JSON state file.
func isLegacy(b []byte) bool { return len(b) > 0 && b[0] == '{' }

// decodeLegacy decodes a JSON state file. The state it returns has no full
// snapshot saved (lastFull -1), so the next save writes one in the binary
// format and no delta chain ever starts from a JSON file.
func decodeLegacy(b []byte) (*state, error) {
	var ls legacyState
	if err := json.Unmarshal(b, &ls); err != nil {
		return nil, fmt.Errorf("decode session state: %w: %v", ErrCorruptState, err)
	}
	s := newState(ls.Version)
	s.MaxEvent, s.Watermark = ls.MaxEvent, ls.Watermark
	for _, le := range ls.Editors {
		if le == nil || len(le.Sessions) == 0 {
			return nil, fmt.Errorf("decode session state %d: %w: empty editor entry", ls.Version, ErrCorruptState)
		}
		k := editorKey(le.Wiki, le.User)
		if _, dup := s.Editors[k]; dup {
			return nil, fmt.Errorf("decode session state %d: %w: editor %q/%q twice", ls.Version, ErrCorruptState, le.Wiki, le.User)
		}
		ed := newEditor(k, le.Wiki)
		for _, ls := range le.Sessions {
			if ls == nil {
				return nil, fmt.Errorf("decode session state: %w: null session", ErrCorruptState)
			}
			ss := &session{Start: ls.Start, End: ls.End, Edits: ls.Edits, Added: ls.Added, Removed: ls.Removed,
				Bot: ls.Bot}
			for _, p := range ls.Pages {
				ss.Pages.add(pageOf(p))
			}
			ed.Sessions = append(ed.Sessions, ss)
		}
		if err := ed.check(); err != nil {
			return nil, fmt.Errorf("decode session state %d: %w", ls.Version, err)
		}
		s.Editors[k] = ed
	}
	return s, nil
}
