package silver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"lakehouse/stream"
)

// state is the dedup state after batch version: every emitted meta.id whose
// event_time + delay has not yet fallen below the watermark, with its event
// time in Unix seconds (4 bytes: events are stamped in whole seconds).
type state struct {
	version   int64 // batch the state is after; -1 before the first
	maxEvent  int64 // newest event time seen, Unix µs, or noTime
	watermark int64 // watermark batch version used, Unix µs, or noTime
	ids       map[idKey]uint32

	added        []keyTime // ids added by batch version (the delta)
	lastFull     int64     // newest version saved as a full snapshot; -1 none
	deltaEntries int       // entries saved in deltas since lastFull
	swept        int64     // watermark of the last eviction sweep
}

type keyTime struct {
	key  idKey
	secs uint32
}

func newState(version int64) *state {
	return &state{version: version, maxEvent: noTime, watermark: noTime, ids: map[idKey]uint32{},
		lastFull: -1, swept: noTime}
}

// live reports whether key is in the state for a batch with watermark wm:
// present and event_time + delay >= wm. Expired entries not yet evicted do
// not count, so output never depends on when the sweep ran.
func (s *state) live(k idKey, wm int64, delay time.Duration) bool {
	secs, ok := s.ids[k]
	return ok && !expired(secs, wm, delay)
}

func expired(secs uint32, wm int64, delay time.Duration) bool {
	return wm != noTime && int64(secs)*1_000_000+delay.Microseconds() < wm
}

func (s *state) add(k idKey, eventTime int64) {
	secs := toSecs(eventTime)
	s.ids[k] = secs
	s.added = append(s.added, keyTime{k, secs})
}

func toSecs(us int64) uint32 {
	secs := us / 1_000_000
	switch {
	case secs < 0:
		return 0
	case secs > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(secs)
}

// evict removes expired ids. A full sweep walks the whole map, so it runs
// only when the watermark has moved by a tenth of the delay since the last.
func (s *state) evict(wm int64, delay time.Duration) {
	if wm == noTime || (s.swept != noTime && wm-s.swept < delay.Microseconds()/10) {
		return
	}
	for k, secs := range s.ids {
		if expired(secs, wm, delay) {
			delete(s.ids, k)
		}
	}
	s.swept = wm
}

// State file layout (little endian):
//
//	magic "SLV1" | kind u8 (0 full, 1 delta) | version i64 | maxEvent i64 |
//	watermark i64 | n u64 | n × (key [16]byte, secs u32) | crc32 (IEEE) of all before
//
// A full file holds every live id after version; a delta holds the ids added
// by batch version and applies on top of version-1.
const (
	stateMagic  = "SLV1"
	kindFull    = 0
	kindDelta   = 1
	headerSize  = 4 + 1 + 8 + 8 + 8 + 8
	entrySize   = 16 + 4
	trailerSize = 4
)

type stateHeader struct {
	kind      byte
	version   int64
	maxEvent  int64
	watermark int64
	n         uint64
}

// encode renders the state as a full snapshot (skipping ids expired at wm)
// or as the delta of the current batch, into dst's storage when it is large
// enough (a full snapshot of millions of ids is hundreds of MB: reusing the
// buffer keeps the process from holding two).
func (s *state) encode(kind byte, delay time.Duration, dst []byte) []byte {
	var n int
	if kind == kindFull {
		n = len(s.ids)
	} else {
		n = len(s.added)
	}
	size := headerSize + n*entrySize + trailerSize
	buf := dst[:0]
	if cap(buf) < size {
		buf = make([]byte, 0, size+size/8)
	}
	buf = buf[:headerSize]
	copy(buf, stateMagic)
	buf[4] = kind
	le := binary.LittleEndian
	le.PutUint64(buf[5:], uint64(s.version))
	le.PutUint64(buf[13:], uint64(s.maxEvent))
	le.PutUint64(buf[21:], uint64(s.watermark))
	var count uint64
	put := func(k idKey, secs uint32) {
		buf = append(buf, k[:]...)
		buf = le.AppendUint32(buf, secs)
		count++
	}
	if kind == kindFull {
		for k, secs := range s.ids {
			if !expired(secs, s.watermark, delay) {
				put(k, secs)
			}
		}
	} else {
		for _, kt := range s.added {
			put(kt.key, kt.secs)
		}
	}
	le.PutUint64(buf[29:], count)
	return le.AppendUint32(buf, crc32.ChecksumIEEE(buf))
}

func decodeHeader(b []byte) (stateHeader, error) {
	if len(b) < headerSize+trailerSize || string(b[:4]) != stateMagic {
		return stateHeader{}, fmt.Errorf("decode state: %w: bad header", ErrCorruptState)
	}
	le := binary.LittleEndian
	h := stateHeader{kind: b[4], version: int64(le.Uint64(b[5:])), maxEvent: int64(le.Uint64(b[13:])),
		watermark: int64(le.Uint64(b[21:])), n: le.Uint64(b[29:])}
	if h.kind != kindFull && h.kind != kindDelta {
		return h, fmt.Errorf("decode state: %w: kind %d", ErrCorruptState, h.kind)
	}
	if uint64(len(b)) != headerSize+h.n*entrySize+trailerSize {
		return h, fmt.Errorf("decode state %d: %w: %d bytes for %d ids", h.version, ErrCorruptState, len(b), h.n)
	}
	body := len(b) - trailerSize
	if crc32.ChecksumIEEE(b[:body]) != le.Uint32(b[body:]) {
		return h, fmt.Errorf("decode state %d: %w: checksum mismatch", h.version, ErrCorruptState)
	}
	return h, nil
}

// apply adds the entries of an encoded state file to s.ids.
func (s *state) apply(b []byte, h stateHeader) {
	p := b[headerSize:]
	for i := uint64(0); i < h.n; i++ {
		var k idKey
		copy(k[:], p[:16])
		s.ids[k] = binary.LittleEndian.Uint32(p[16:20])
		p = p[entrySize:]
	}
}

// loader returns state version v's bytes (stream.ErrNoEntry if missing).
type loader func(v int64) ([]byte, error)

// rebuild reconstructs state version v from data (its bytes, may be nil)
// and, for a delta, the versions before it down to the last full snapshot.
func rebuild(v int64, data []byte, load loader, delay time.Duration) (*state, error) {
	if v < 0 {
		return newState(v), nil
	}
	if data == nil {
		if load == nil {
			return nil, fmt.Errorf("rebuild state %d: %w", v, stream.ErrNoEntry)
		}
		var err error
		if data, err = load(v); err != nil {
			return nil, fmt.Errorf("rebuild state %d: %w", v, err)
		}
	}
	type file struct {
		h stateHeader
		b []byte
	}
	var chain []file
	for want := v; ; want-- {
		h, err := decodeHeader(data)
		if err != nil {
			return nil, err
		}
		if h.version != want {
			return nil, fmt.Errorf("rebuild state %d: %w: file of version %d holds %d", v, ErrCorruptState, want, h.version)
		}
		chain = append(chain, file{h, data})
		if h.kind == kindFull {
			break
		}
		if want == 0 {
			break // the first batch's delta applies on the empty state
		}
		if load == nil {
			return nil, fmt.Errorf("rebuild state %d: delta needs version %d: %w", v, want-1, ErrCorruptState)
		}
		if data, err = load(want - 1); err != nil {
			if errors.Is(err, stream.ErrNoEntry) {
				// Not ErrNoEntry itself: a broken chain is corruption, not
				// a lost checkpoint.
				return nil, fmt.Errorf("rebuild state %d: delta chain broken at %d: %w (%v)", v, want-1, ErrCorruptState, err)
			}
			return nil, fmt.Errorf("rebuild state %d: %w", v, err)
		}
	}
	s := newState(v)
	top := chain[0].h
	s.maxEvent, s.watermark = top.maxEvent, top.watermark
	for i := len(chain) - 1; i >= 0; i-- {
		f := chain[i]
		s.apply(f.b, f.h)
		if f.h.kind == kindFull {
			s.lastFull = f.h.version
		} else {
			s.deltaEntries += int(f.h.n)
		}
	}
	s.evict(s.watermark, delay)
	return s, nil
}

// StateVersion is the batch the state is after (stream.EventState).
func (s *state) StateVersion() int64 { return s.version }

// Clock is the watermark of that batch and the newest event time seen
// (stream.EventState).
func (s *state) Clock() (watermark, maxEvent int64) { return s.watermark, s.maxEvent }
