package boltfile

import (
	"encoding/binary"
	"fmt"
	"io"
)

// bbolt page layout (bbolt v1.4/v1.5, little-endian): a 16-byte header
// (id uint64, flags uint16, count uint16, overflow uint32), then count
// 16-byte elements. A branch element is (pos, ksize uint32, child pgid
// uint64); a leaf element is (flags, pos, ksize, vsize uint32), its key at
// the element's offset plus pos and its value after the key. A leaf element
// with the bucket flag holds a bucket header (root pgid, sequence uint64),
// followed by an inline page when root is 0. A freelist page holds count
// page ids (uint64, sorted); when count is 0xFFFF the first id is the real
// count instead.
const (
	branchPage   = 0x01
	leafPage     = 0x02
	freelistPage = 0x10
	bucketLeaf   = 0x01
	elemSize     = 16
	maxDepth     = 64
)

// walker checks pages of a bbolt file on the raw file, the way bbolt's
// own page walk (the freelist rebuild, the consistency check) would,
// without ever panicking: each page is within the high-water mark and
// names itself, is of the expected type, its elements lie inside it, and
// no page is reached twice.
type walker struct {
	f        io.ReaderAt
	pageSize int64
	hwm      uint64
	seen     []uint64 // bitmap of reached pages
	reached  uint64   // pages marked (overflow pages included)
}

func newWalker(f io.ReaderAt, m meta) *walker {
	return &walker{f: f, pageSize: int64(m.pageSize), hwm: m.pgid, seen: make([]uint64, (m.pgid+63)/64)}
}

func (w *walker) marked(id uint64) bool { return w.seen[id/64]&(1<<(id%64)) != 0 }

func (w *walker) mark(id uint64, what string) error {
	if w.marked(id) {
		return fmt.Errorf("%w: page %d is reached twice (the second time as %s)", ErrDamaged, id, what)
	}
	w.seen[id/64] |= 1 << (id % 64)
	w.reached++
	return nil
}

// inRange checks that page id may hold a page of the tree or the freelist.
func (w *walker) inRange(id uint64) error {
	if id < 2 || id >= w.hwm {
		return fmt.Errorf("%w: page id %d outside 2..%d", ErrDamaged, id, w.hwm-1)
	}
	return nil
}

// page reads page id with its overflow pages and checks its header: it
// names itself, has type flags want, and ends below the high-water mark.
// With mark, the page and its overflow pages are marked reached.
func (w *walker) page(id uint64, want uint16, mark bool) ([]byte, error) {
	if err := w.inRange(id); err != nil {
		return nil, err
	}
	b := make([]byte, w.pageSize)
	if _, err := w.f.ReadAt(b, int64(id)*w.pageSize); err != nil {
		return nil, fmt.Errorf("%w: read page %d: %w", ErrDamaged, id, err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(b); got != id {
		return nil, fmt.Errorf("%w: page %d names itself %d", ErrDamaged, id, got)
	}
	flags := le.Uint16(b[8:])
	if flags == 0 || flags&^want != 0 || flags&(flags-1) != 0 { // one type, one of want
		return nil, fmt.Errorf("%w: page %d: type flags %#x, want %#x", ErrDamaged, id, flags, want)
	}
	overflow := uint64(le.Uint32(b[12:]))
	if id+overflow >= w.hwm {
		return nil, fmt.Errorf("%w: page %d overflows past the high-water mark (%d pages)", ErrDamaged, id, overflow)
	}
	if mark {
		for i := id; i <= id+overflow; i++ {
			if err := w.mark(i, fmt.Sprintf("part of page %d", id)); err != nil {
				return nil, err
			}
		}
	}
	if overflow > 0 {
		b = append(b, make([]byte, int64(overflow)*w.pageSize)...)
		if _, err := w.f.ReadAt(b[w.pageSize:], int64(id+1)*w.pageSize); err != nil {
			return nil, fmt.Errorf("%w: read page %d: %w", ErrDamaged, id, err)
		}
	}
	return b, nil
}

// walk checks the tree rooted at page id, every page of it.
func (w *walker) walk(id uint64, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: tree deeper than %d at page %d", ErrDamaged, maxDepth, id)
	}
	b, err := w.page(id, branchPage|leafPage, true)
	if err != nil {
		return err
	}
	return w.node(b, id, depth, true)
}

// node checks the elements of the page in b (a page of the file, or an
// inline bucket's page inside a value). With deep, it walks every page
// they name; without, it only checks that those ids are within the file.
func (w *walker) node(b []byte, id uint64, depth int, deep bool) error {
	if len(b) < 16 {
		return fmt.Errorf("%w: page %d: %d bytes", ErrDamaged, id, len(b))
	}
	le := binary.LittleEndian
	flags, count := le.Uint16(b[8:]), int(le.Uint16(b[10:]))
	if 16+count*elemSize > len(b) {
		return fmt.Errorf("%w: page %d: %d elements do not fit", ErrDamaged, id, count)
	}
	child := func(c uint64) error {
		if deep {
			return w.walk(c, depth+1)
		}
		return w.inRange(c)
	}
	for i := range count {
		off := 16 + i*elemSize
		e := b[off : off+elemSize]
		switch flags {
		case branchPage:
			pos, ksize := int(le.Uint32(e)), int(le.Uint32(e[4:]))
			if off+pos+ksize > len(b) {
				return fmt.Errorf("%w: page %d: branch key %d outside the page", ErrDamaged, id, i)
			}
			if err := child(le.Uint64(e[8:])); err != nil {
				return err
			}
		case leafPage:
			eflags, pos, ksize, vsize := le.Uint32(e), int(le.Uint32(e[4:])), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
			start := off + pos + ksize
			if pos < 0 || start < off || start+vsize > len(b) || start+vsize < start {
				return fmt.Errorf("%w: page %d: leaf element %d outside the page", ErrDamaged, id, i)
			}
			if eflags&bucketLeaf == 0 {
				continue
			}
			v := b[start : start+vsize]
			if len(v) < 16 {
				return fmt.Errorf("%w: page %d: bucket header of %d bytes", ErrDamaged, id, len(v))
			}
			if root := le.Uint64(v); root != 0 {
				if err := child(root); err != nil {
					return err
				}
			} else if err := w.node(v[16:], id, depth+1, deep); err != nil { // inline bucket
				return err
			}
		default:
			return fmt.Errorf("%w: page %d: type flags %#x, want a branch or a leaf", ErrDamaged, id, flags)
		}
	}
	return nil
}

// freelist reads the freelist page id (with its overflow pages) and
// returns the ids it lists after checking them: each within the file,
// strictly increasing (bbolt writes them sorted, and a repeated id would
// be handed out twice), none inside the freelist page itself. With mark,
// the freelist's pages and the ids it lists are marked reached.
func (w *walker) freelist(id uint64, mark bool) ([]uint64, error) {
	b, err := w.page(id, freelistPage, mark)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	overflow := uint64(le.Uint32(b[12:]))
	n, start := uint64(le.Uint16(b[10:])), 16
	if n == 0xFFFF {
		n, start = le.Uint64(b[16:]), 24
	}
	if n > uint64(len(b)-start)/8 {
		return nil, fmt.Errorf("%w: freelist page %d: %d ids do not fit in %d pages", ErrDamaged, id, n, overflow+1)
	}
	ids := make([]uint64, n)
	for i := range ids {
		p := le.Uint64(b[start+8*i:])
		switch {
		case w.inRange(p) != nil:
			return nil, fmt.Errorf("%w: freelist page %d lists page %d, outside 2..%d", ErrDamaged, id, p, w.hwm-1)
		case i > 0 && p <= ids[i-1]:
			return nil, fmt.Errorf("%w: freelist page %d lists page %d after page %d (not sorted, or twice)", ErrDamaged, id, p, ids[i-1])
		case p >= id && p <= id+overflow:
			return nil, fmt.Errorf("%w: freelist page %d lists itself as free (page %d)", ErrDamaged, id, p)
		}
		ids[i] = p
		if mark {
			if err := w.mark(p, "a free page"); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}
