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
// followed by an inline page when root is 0.
const (
	branchPage = 0x01
	leafPage   = 0x02
	bucketLeaf = 0x01
	elemSize   = 16
	maxDepth   = 64
)

// walker checks every page reachable from a root the way bbolt's own page
// walk (the freelist rebuild, the consistency check) would, on the raw
// file, without ever panicking: each page is within the high-water mark
// and names itself, is a branch or a leaf, its elements lie inside it, and
// no page is reached twice.
type walker struct {
	f        io.ReaderAt
	pageSize int64
	hwm      uint64
	seen     []uint64 // bitmap of reached pages
}

func newWalker(f io.ReaderAt, m meta) *walker {
	return &walker{f: f, pageSize: int64(m.pageSize), hwm: m.pgid, seen: make([]uint64, (m.pgid+63)/64)}
}

func (w *walker) mark(id uint64) error {
	if w.seen[id/64]&(1<<(id%64)) != 0 {
		return fmt.Errorf("%w: page %d is reached twice", ErrDamaged, id)
	}
	w.seen[id/64] |= 1 << (id % 64)
	return nil
}

// page reads page id with its overflow pages and checks its header.
func (w *walker) page(id uint64) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Errorf("%w: page id %d outside 2..%d", ErrDamaged, id, w.hwm-1)
	}
	b := make([]byte, w.pageSize)
	if _, err := w.f.ReadAt(b, int64(id)*w.pageSize); err != nil {
		return nil, fmt.Errorf("%w: read page %d: %w", ErrDamaged, id, err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(b); got != id {
		return nil, fmt.Errorf("%w: page %d names itself %d", ErrDamaged, id, got)
	}
	overflow := uint64(le.Uint32(b[12:]))
	if id+overflow >= w.hwm {
		return nil, fmt.Errorf("%w: page %d overflows past the high-water mark (%d pages)", ErrDamaged, id, overflow)
	}
	for i := id; i <= id+overflow; i++ {
		if err := w.mark(i); err != nil {
			return nil, err
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

// walk checks the tree rooted at page id.
func (w *walker) walk(id uint64, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: tree deeper than %d at page %d", ErrDamaged, maxDepth, id)
	}
	b, err := w.page(id)
	if err != nil {
		return err
	}
	return w.node(b, id, depth)
}

// node checks the elements of the page in b (a page of the file, or an
// inline bucket's page inside a value).
func (w *walker) node(b []byte, id uint64, depth int) error {
	if len(b) < 16 {
		return fmt.Errorf("%w: page %d: %d bytes", ErrDamaged, id, len(b))
	}
	le := binary.LittleEndian
	flags, count := le.Uint16(b[8:]), int(le.Uint16(b[10:]))
	if 16+count*elemSize > len(b) {
		return fmt.Errorf("%w: page %d: %d elements do not fit", ErrDamaged, id, count)
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
			if err := w.walk(le.Uint64(e[8:]), depth+1); err != nil {
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
				if err := w.walk(root, depth+1); err != nil {
					return err
				}
			} else if err := w.node(v[16:], id, depth+1); err != nil { // inline bucket
				return err
			}
		default:
			return fmt.Errorf("%w: page %d: type flags %#x, want a branch or a leaf", ErrDamaged, id, flags)
		}
	}
	return nil
}
