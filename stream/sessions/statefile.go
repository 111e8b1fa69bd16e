package sessions

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"strings"

	"lakehouse/stream"
)

// State file layout (little endian; str is a uvarint length and the bytes,
// n, r and p are uvarint counts; a page is a pageID):
//
//	magic "SES3" | kind u8 (0 full, 1 delta) | version i64 | maxEvent i64 |
//	watermark i64 | editors u64 | editors × editor | crc32 (IEEE) of all before
//	editor:  wiki str | user str | n | n × session | r | r × key i64 |
//	         all u8 | h | h × held
//	session: op u8 (0 created, 1 updated) | key i64 | start i64 | end i64 |
//	         edits i64 | added i64 | removed i64 | bot u8 | p | p × page u64
//	held:    at i64 | delta i64 | bot u8 | page u64
//
// A session's key is its start in the version before (for a created one,
// its start). A full file holds every open session after version, each as
// created, and no removed keys. A delta holds what batch version changed
// and applies on top of version-1, editor by editor: the sessions the batch
// created (with all their pages), the earlier sessions it changed in place
// (their new start, end, counts and bot flag, and only the pages the batch
// added), and the keys of the earlier sessions it removed (emitted, or
// merged into another). A bridging edit merges into the session with the
// most pages: if that is an earlier one, the delta holds an update with the
// pages it gained and the others' keys as removed. Editors, sessions and
// pages are in no particular order.
//
// Held edits (see state.add) follow each editor's sessions, in event time.
// A full file holds all of them. A delta first drops from version-1's held
// edits those below the file's watermark (the ones the batch folded), or
// all of them when all is 1 (the editor stopped holding), and then adds the
// edits the batch held back. Editors a batch did not change hold no edit
// below its watermark (every batch folds those first), so the rule applies
// to the editors listed only.
//
// Earlier binary formats still load, and a delta chain may mix formats (a
// build upgraded mid-chain writes its deltas on top of the old files):
// "SES2" files hold each page and held edit's title as a str, which loading
// turns into its pageID; "SES1" files, written before held edits existed,
// also have no all byte and no held edits.
//
// Files written before this format are JSON ({"version":...}, see
// decodeLegacy): full snapshots, still read.
const (
	stateMagic  = "SES3"
	magicV2     = "SES2"        // titles instead of page ids
	magicV1     = "SES1"        // titles, and before held edits
	heldSize    = 8 + 8 + 1 + 1 // the smallest held edit (SES2's, of an empty title)
	kindFull    = 0
	kindDelta   = 1
	opCreated   = 0
	opUpdated   = 1
	headerSize  = 4 + 1 + 8 + 8 + 8 + 8
	sessionSize = 1 + 6*8 + 1 + 1 // a session with no pages
	trailerSize = 4
)

type stateHeader struct {
	format    int // 3 ("SES3"), 2 ("SES2": titles) or 1 ("SES1": titles, no held edits)
	kind      byte
	version   int64
	maxEvent  int64
	watermark int64
	editors   uint64
}

// encode renders the state as a full snapshot or as the delta of batch
// Version (which needs s.tracked), into dst's storage when it is large
// enough.
func (s *state) encode(kind byte, dst []byte) []byte {
	buf := append(dst[:0], make([]byte, headerSize)...)
	copy(buf, stateMagic)
	buf[4] = kind
	le := binary.LittleEndian
	le.PutUint64(buf[5:], uint64(s.Version))
	le.PutUint64(buf[13:], uint64(s.MaxEvent))
	le.PutUint64(buf[21:], uint64(s.Watermark))
	var n uint64
	if kind == kindFull {
		for _, ed := range s.Editors {
			buf = appendEditor(buf, ed, false)
			n++
		}
	} else {
		for _, ed := range s.dirty {
			if ed.changed() {
				buf = appendEditor(buf, ed, true)
				n++
			}
		}
	}
	le.PutUint64(buf[29:], n)
	return le.AppendUint32(buf, crc32.ChecksumIEEE(buf))
}

// changed reports whether ed has anything for batch Version's delta.
func (ed *editor) changed() bool {
	if len(ed.d.removed) > 0 || ed.d.folded > 0 || len(ed.d.newHeld) > 0 {
		return true
	}
	for _, ss := range ed.Sessions {
		if ss.fresh || ss.touched() {
			return true
		}
	}
	return false
}

func appendEditor(buf []byte, ed *editor, delta bool) []byte {
	buf = appendString(buf, ed.Wiki)
	buf = appendString(buf, ed.User)
	n := 0
	for _, ss := range ed.Sessions {
		if !delta || ss.fresh || ss.touched() {
			n++
		}
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, ss := range ed.Sessions {
		switch {
		case !delta || ss.fresh:
			buf = appendScalars(buf, opCreated, ss.Start, ss)
			buf = binary.AppendUvarint(buf, uint64(ss.Pages.len()))
			for p := range ss.Pages.all() {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(p))
			}
		case ss.touched():
			buf = appendScalars(buf, opUpdated, ss.d.base, ss)
			buf = binary.AppendUvarint(buf, uint64(len(ss.d.added)))
			for _, p := range ss.d.added {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(p))
			}
		}
	}
	if !delta {
		buf = binary.AppendUvarint(buf, 0)
		return appendHeld(buf, true, ed.Held)
	}
	buf = binary.AppendUvarint(buf, uint64(len(ed.d.removed)))
	for _, k := range ed.d.removed {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(k))
	}
	return appendHeld(buf, ed.d.all, ed.d.newHeld)
}

func appendHeld(buf []byte, all bool, hs []held) []byte {
	buf = appendBool(buf, all)
	buf = binary.AppendUvarint(buf, uint64(len(hs)))
	le := binary.LittleEndian
	for _, h := range hs {
		buf = le.AppendUint64(buf, uint64(h.At))
		buf = le.AppendUint64(buf, uint64(h.Delta))
		buf = appendBool(buf, h.Bot)
		buf = le.AppendUint64(buf, uint64(h.Page))
	}
	return buf
}

func appendBool(buf []byte, b bool) []byte {
	if b {
		return append(buf, 1)
	}
	return append(buf, 0)
}

func appendScalars(buf []byte, op byte, key int64, ss *session) []byte {
	le := binary.LittleEndian
	buf = append(buf, op)
	for _, v := range []int64{key, ss.Start, ss.End, ss.Edits, ss.Added, ss.Removed} {
		buf = le.AppendUint64(buf, uint64(v))
	}
	return appendBool(buf, ss.Bot)
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

func decodeHeader(b []byte) (stateHeader, error) {
	format := 0
	if len(b) >= headerSize+trailerSize {
		switch string(b[:4]) {
		case stateMagic:
			format = 3
		case magicV2:
			format = 2
		case magicV1:
			format = 1
		}
	}
	if format == 0 {
		return stateHeader{}, fmt.Errorf("decode session state: %w: bad header", ErrCorruptState)
	}
	le := binary.LittleEndian
	h := stateHeader{format: format, kind: b[4], version: int64(le.Uint64(b[5:])), maxEvent: int64(le.Uint64(b[13:])),
		watermark: int64(le.Uint64(b[21:])), editors: le.Uint64(b[29:])}
	if h.kind != kindFull && h.kind != kindDelta {
		return h, fmt.Errorf("decode session state: %w: kind %d", ErrCorruptState, h.kind)
	}
	body := len(b) - trailerSize
	if crc32.ChecksumIEEE(b[:body]) != le.Uint32(b[body:]) {
		return h, fmt.Errorf("decode session state %d: %w: checksum mismatch", h.version, ErrCorruptState)
	}
	return h, nil
}

// apply applies an encoded state file (its header checked by decodeHeader)
// to s: a full file to an empty state, a delta to the version before it.
// It returns the file's units (see pendingUnits).
func (s *state) apply(b []byte, h stateHeader) (int, error) {
	r := reader{b: b[headerSize : len(b)-trailerSize], titles: h.format < 3}
	units := 0
	seen := map[string]bool{}
	for i := uint64(0); i < h.editors && r.err == nil; i++ {
		n, err := s.applyEditor(&r, h, seen)
		if err != nil {
			return 0, fmt.Errorf("decode session state %d: %w", h.version, err)
		}
		units += n
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the last editor", len(r.b))
	}
	if r.err != nil {
		return 0, fmt.Errorf("decode session state %d: %w: %v", h.version, ErrCorruptState, r.err)
	}
	return units, nil
}

// applyEditor applies one editor's entries.
func (s *state) applyEditor(r *reader, h stateHeader, seen map[string]bool) (int, error) {
	kind := h.kind
	wiki, user := r.str(), r.str()
	k := editorKey(wiki, user)
	if r.err == nil && seen[k] {
		r.fail(fmt.Errorf("editor %q/%q listed twice", wiki, user))
	}
	seen[k] = true
	ed := s.Editors[k]
	if ed == nil {
		ed = newEditor(k, wiki)
	}
	old := ed.Sessions
	keys := make([]int64, len(old)) // the keys of version-1, before updates move starts
	for i, ss := range old {
		keys[i] = ss.Start
	}
	used := make([]bool, len(old))
	find := func(key int64) *session {
		i, ok := slices.BinarySearch(keys, key)
		if !ok || used[i] {
			r.fail(fmt.Errorf("editor %q/%q: key %d not open, or named twice", wiki, user, key))
			return nil
		}
		used[i] = true
		return old[i]
	}
	units := 0
	var created []*session
	for n := r.count(sessionSize); n > 0 && r.err == nil; n-- {
		op, key := r.u8(), r.i64()
		var ss *session
		switch {
		case op == opCreated:
			ss = &session{}
			created = append(created, ss)
		case op == opUpdated && kind == kindDelta:
			ss = find(key)
		default:
			r.fail(fmt.Errorf("editor %q/%q: op %d in a kind %d file", wiki, user, op, kind))
		}
		units += 1 + r.session(ss)
		if op == opCreated && key != ss.Start {
			r.fail(fmt.Errorf("editor %q/%q: created session %d under key %d", wiki, user, ss.Start, key))
		}
	}
	removed := map[*session]bool{}
	for n := r.count(8); n > 0 && r.err == nil; n-- {
		if ss := find(r.i64()); ss != nil {
			removed[ss] = true
		}
		units++
	}
	all, hs := true, []held(nil)
	if h.format > 1 {
		all, hs = r.held()
		units += len(hs)
	}
	if r.err != nil {
		return 0, fmt.Errorf("%w: %v", ErrCorruptState, r.err)
	}
	kept := slices.DeleteFunc(slices.Clone(old), func(ss *session) bool { return removed[ss] })
	ed.Sessions = append(kept, created...)
	if err := ed.check(); err != nil {
		return 0, err
	}
	if err := ed.applyHeld(kind, all, hs, h.watermark); err != nil {
		return 0, err
	}
	if len(ed.Sessions) == 0 && len(ed.Held) == 0 {
		delete(s.Editors, k)
		delete(s.holding, ed)
	} else {
		s.Editors[k] = ed
		if len(ed.Held) > 0 {
			s.holding[ed] = struct{}{}
		} else {
			delete(s.holding, ed)
		}
	}
	return units, nil
}

// applyHeld replaces ed's held edits (a full file's entry), or drops those
// a delta's batch folded and adds those it held back.
func (ed *editor) applyHeld(kind byte, all bool, hs []held, wm int64) error {
	if !slices.IsSortedFunc(hs, func(a, b held) int { return cmp.Compare(a.At, b.At) }) {
		return fmt.Errorf("%w: editor %q/%q: held edits out of order", ErrCorruptState, ed.Wiki, ed.User)
	}
	if kind == kindFull || all {
		ed.Held = hs
		return nil
	}
	n := sort.Search(len(ed.Held), func(i int) bool { return ed.Held[i].At >= wm })
	if wm == noTime {
		n = 0
	}
	if len(hs) > 0 && hs[0].At < wm {
		return fmt.Errorf("%w: editor %q/%q: held edit below the watermark", ErrCorruptState, ed.Wiki, ed.User)
	}
	kept := slices.Clone(ed.Held[n:])
	for _, h := range hs {
		i := sort.Search(len(kept), func(i int) bool { return kept[i].At > h.At })
		kept = slices.Insert(kept, i, h)
	}
	ed.Held = kept
	return nil
}

// check sorts ed's sessions by start and checks that they are well formed
// and do not overlap.
func (ed *editor) check() error {
	if strings.Contains(ed.Wiki, "\x00") {
		return fmt.Errorf("%w: editor %q/%q: NUL in wiki", ErrCorruptState, ed.Wiki, ed.User)
	}
	slices.SortFunc(ed.Sessions, func(a, b *session) int { return cmp.Compare(a.Start, b.Start) })
	for i, ss := range ed.Sessions {
		if ss.Start > ss.End || ss.Edits < 1 || ss.Pages.len() == 0 || (i > 0 && ed.Sessions[i-1].End >= ss.Start) {
			return fmt.Errorf("%w: editor %q/%q: session %d-%d (%d edits, %d pages) malformed or overlapping",
				ErrCorruptState, ed.Wiki, ed.User, ss.Start, ss.End, ss.Edits, ss.Pages.len())
		}
	}
	return nil
}

// loader returns state version v's bytes (stream.ErrNoEntry if missing).
type loader func(v int64) ([]byte, error)

// rebuild reconstructs state version v from data (its bytes, may be nil)
// and, for a delta, the versions before it down to the last full snapshot
// (binary or legacy JSON). A missing version v is stream.ErrNoEntry (the
// checkpoint was lost); a missing version further down the chain is
// ErrCorruptState.
func rebuild(v int64, data []byte, load loader) (*state, error) {
	if v < 0 {
		return newState(v), nil
	}
	if data == nil {
		if load == nil {
			return nil, fmt.Errorf("rebuild session state %d: %w", v, stream.ErrNoEntry)
		}
		var err error
		if data, err = load(v); err != nil {
			return nil, fmt.Errorf("rebuild session state %d: %w", v, err)
		}
	}
	chain, s, err := walkChain(v, data, load)
	if err != nil {
		return nil, err
	}
	if s == nil {
		s = newState(v)
	}
	if len(chain) > 0 {
		s.MaxEvent, s.Watermark = chain[0].h.maxEvent, chain[0].h.watermark
	}
	for i := len(chain) - 1; i >= 0; i-- {
		f := chain[i]
		units, err := s.apply(f.b, f.h)
		if err != nil {
			return nil, fmt.Errorf("rebuild session state %d: %w", v, err)
		}
		if f.h.kind == kindFull {
			s.lastFull = f.h.version
		} else {
			s.units += units
		}
	}
	s.Version = v
	return s, nil
}

type stateFile struct {
	h stateHeader
	b []byte
}

// walkChain returns the binary files from version v (data) down to the
// last full snapshot, newest first, or down to a legacy JSON snapshot,
// which it returns decoded (and not in the chain).
func walkChain(v int64, data []byte, load loader) ([]stateFile, *state, error) {
	var chain []stateFile
	for want := v; ; want-- {
		if isLegacy(data) {
			s, err := decodeLegacy(data)
			if err == nil && s.Version != want {
				err = fmt.Errorf("%w: file of version %d holds %d", ErrCorruptState, want, s.Version)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("rebuild session state %d: %w", v, err)
			}
			return chain, s, nil
		}
		h, err := decodeHeader(data)
		if err != nil {
			return nil, nil, fmt.Errorf("rebuild session state %d: %w", v, err)
		}
		if h.version != want {
			return nil, nil, fmt.Errorf("rebuild session state %d: %w: file of version %d holds %d", v, ErrCorruptState, want, h.version)
		}
		chain = append(chain, stateFile{h, data})
		if h.kind == kindFull || want == 0 { // the first batch's delta applies on the empty state
			return chain, nil, nil
		}
		if load == nil {
			return nil, nil, fmt.Errorf("rebuild session state %d: delta needs version %d: %w", v, want-1, ErrCorruptState)
		}
		if data, err = load(want - 1); err != nil {
			if errors.Is(err, stream.ErrNoEntry) {
				// Not ErrNoEntry itself: a broken chain is corruption, not
				// a lost checkpoint.
				return nil, nil, fmt.Errorf("rebuild session state %d: delta chain broken at %d: %w (%v)", v, want-1, ErrCorruptState, err)
			}
			return nil, nil, fmt.Errorf("rebuild session state %d: %w", v, err)
		}
	}
}
