package sessions

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// reader decodes a state file's body; the first failure sticks in err and
// makes every later read return zero values.
type reader struct {
	b      []byte
	err    error
	titles bool // pages are titles (str), as in SES1 and SES2
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(fmt.Errorf("truncated: %d bytes wanted, %d left", n, len(r.b)))
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) i64() int64 {
	if p := r.take(8); p != nil {
		return int64(binary.LittleEndian.Uint64(p))
	}
	return 0
}

// count reads a uvarint count of items of at least size bytes each,
// refusing one the rest of the body cannot hold.
func (r *reader) count(size int) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errors.New("bad uvarint"))
		return 0
	}
	r.b = r.b[n:]
	if v > uint64(len(r.b)/size) {
		r.fail(fmt.Errorf("count %d for the %d bytes left", v, len(r.b)))
		return 0
	}
	return int(v)
}

func (r *reader) str() string { return string(r.take(r.count(1))) }

func (r *reader) flag() bool {
	switch b := r.u8(); b {
	case 0, 1:
		return b == 1
	default:
		r.fail(fmt.Errorf("flag %d", b))
		return false
	}
}

// held reads an editor's all flag and held edits.
func (r *reader) held() (bool, []held) {
	all := r.flag()
	n := r.count(heldSize)
	var hs []held
	if n > 0 {
		hs = make([]held, 0, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		h := held{At: r.i64(), Delta: r.i64()}
		h.Bot = r.flag()
		h.Page = r.page()
		hs = append(hs, h)
	}
	return all, hs
}

// session reads a session's scalars and pages into ss (a created session
// gets a new page set, an updated one the pages added to its own) and
// returns the number of pages read.
func (r *reader) session(ss *session) int {
	if ss == nil {
		ss = &session{}
	}
	ss.Start, ss.End, ss.Edits = r.i64(), r.i64(), r.i64()
	ss.Added, ss.Removed = r.i64(), r.i64()
	ss.Bot = r.flag()
	size := 8
	if r.titles {
		size = 1
	}
	n := r.count(size)
	for i := 0; i < n && r.err == nil; i++ {
		ss.Pages.add(r.page())
	}
	return n
}

// page reads a page: a pageID, or in the older formats its title.
func (r *reader) page() pageID {
	if r.titles {
		return pageOf(r.str())
	}
	if p := r.take(8); p != nil {
		return pageID(binary.LittleEndian.Uint64(p))
	}
	return 0
}
