package stream

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"lakehouse/internal/durable"
	"lakehouse/internal/fault"
)

// The offset and commit entries of a checkpoint live in one append-only
// file, log, instead of a file each: a file per entry cost two file
// creations, two renames and four fsyncs per batch per query, about 4 % of
// the appliance's CPU at the real stream's rate (a CPU profile of the
// soak). An append costs one write and one fsync of the file; its
// directory entry was made durable when the file was created.
//
// A record is
//
//	kind    1 byte: 'o' (OffsetEntry), 'c' (CommitEntry) or 'p' (purge)
//	length  4 bytes, big endian: the payload's length
//	crc     4 bytes, big endian: CRC-32C of kind and payload
//	payload the entry as JSON
//
// A crash can leave the last record torn: shorter than its header says, or
// zeros where the file system extended the file before the data reached
// the disk. That record's append never returned, so the protocol never
// relied on it; loading truncates it. A complete record whose checksum or
// JSON does not match is corruption (ErrCorruptCheckpoint), wherever it is.
// A damaged length field that points past the end of the file cannot be
// told from a torn tail and is cut off with what follows it: when the
// entries lost that way include a batch the table has committed, recovery
// stops with ErrTableAhead (never a duplicate); otherwise the next batch
// is planned again from the last entry kept.
// A later record of the same kind and batch replaces an earlier one, as
// rewriting a file did. Purge appends a purge record (the first batch
// kept; loading drops the entries below it) and rewrites the file (temp
// file, fsync, rename) once it holds more than twice the live entries, so
// the file stays proportional to RetainBatches. A purge record is not
// fsynced by itself: losing it in a crash only brings back entries the
// next purge drops again.

const (
	logName      = "log"
	recordHeader = 9
	kindOffsets  = 'o'
	kindCommit   = 'c'
	kindPurge    = 'p'
	// minRewrite is how many dead records the file may hold before a
	// Purge rewrites it, whatever the live count.
	minRewrite = 64
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryLog is the loaded log: the live entries and the append handle.
type entryLog struct {
	dir     string
	f       *os.File
	size    int64 // bytes of whole records in the file
	records int   // records in the file, live or not
	offsets map[int64]OffsetEntry
	commits map[int64]CommitEntry
	broken  error // set when a failed append could not be undone
}

func (l *entryLog) path() string { return filepath.Join(l.dir, logName) }

// openEntryLog loads dir/log (creating it durably if missing), truncating a
// torn last record.
func openEntryLog(dir string) (*entryLog, error) {
	l := &entryLog{dir: dir, offsets: map[int64]OffsetEntry{}, commits: map[int64]CommitEntry{}}
	data, err := os.ReadFile(l.path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := durable.WriteFile(dir, logName, nil); err != nil {
			return nil, fmt.Errorf("create %s: %w", l.path(), err)
		}
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", l.path(), err)
	}
	good, err := l.load(data)
	if err != nil {
		return nil, err
	}
	if l.f, err = os.OpenFile(l.path(), os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return nil, fmt.Errorf("open %s: %w", l.path(), err)
	}
	if good < int64(len(data)) {
		if err := l.truncate(good); err != nil {
			l.f.Close()
			return nil, err
		}
	}
	l.size = good
	return l, nil
}

// load decodes data's records into the maps and returns the length of the
// whole records (the rest is a torn tail).
func (l *entryLog) load(data []byte) (int64, error) {
	p := 0
	for p < len(data) {
		rest := data[p:]
		if len(rest) < recordHeader || allZero(rest) {
			return int64(p), nil // torn header, or an extension never written
		}
		n := int(binary.BigEndian.Uint32(rest[1:5]))
		if n > len(rest)-recordHeader {
			return int64(p), nil // torn payload
		}
		kind, payload := rest[0], rest[recordHeader:recordHeader+n]
		crc := crc32.Update(crc32.Checksum([]byte{kind}, castagnoli), castagnoli, payload)
		if crc != binary.BigEndian.Uint32(rest[5:9]) {
			return 0, fmt.Errorf("%s: record at byte %d: checksum mismatch: %w", l.path(), p, ErrCorruptCheckpoint)
		}
		if err := l.index(kind, payload); err != nil {
			return 0, fmt.Errorf("%s: record at byte %d: %v: %w", l.path(), p, err, ErrCorruptCheckpoint)
		}
		l.records++
		p += recordHeader + n
	}
	return int64(p), nil
}

// index decodes one record's payload into the maps.
func (l *entryLog) index(kind byte, payload []byte) error {
	switch kind {
	case kindOffsets:
		var e OffsetEntry
		if err := json.Unmarshal(payload, &e); err != nil {
			return err
		}
		l.offsets[e.Batch] = e
	case kindCommit:
		var e CommitEntry
		if err := json.Unmarshal(payload, &e); err != nil {
			return err
		}
		l.commits[e.Batch] = e
	case kindPurge:
		var p purgeRecord
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		l.drop(p.KeepFrom)
	default:
		return fmt.Errorf("unknown record kind %q", kind)
	}
	return nil
}

func allZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// appendRecord encodes one record of kind for v onto dst.
func appendRecord(dst []byte, kind byte, v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	crc := crc32.Update(crc32.Checksum([]byte{kind}, castagnoli), castagnoli, payload)
	dst = append(dst, kind)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc)
	return append(dst, payload...), nil
}

// add durably appends an OffsetEntry or a CommitEntry; the maps change
// only once it is on disk.
func (l *entryLog) add(v any) error {
	var kind byte
	switch v.(type) {
	case OffsetEntry:
		kind = kindOffsets
	case CommitEntry:
		kind = kindCommit
	default:
		return fmt.Errorf("entry log: %T is not an entry", v)
	}
	rec, err := appendRecord(nil, kind, v)
	if err != nil {
		return fmt.Errorf("encode entry: %w", err)
	}
	if err := l.write(rec, true); err != nil {
		return err
	}
	switch e := v.(type) {
	case OffsetEntry:
		l.offsets[e.Batch] = e
	case CommitEntry:
		l.commits[e.Batch] = e
	}
	return nil
}

// write appends rec (and fsyncs the file when sync is set). A failed
// append is cut off again, so the next record follows a whole one; when
// even that fails, every later append fails (reopen to go on).
func (l *entryLog) write(rec []byte, sync bool) error {
	if l.broken != nil {
		return l.broken
	}
	if err := fault.Err(FailCheckpointWrite); err != nil {
		return fmt.Errorf("append to %s: %w", l.path(), err)
	}
	_, err := l.f.Write(rec)
	if err == nil && sync {
		err = durable.Fsync(l.f)
	}
	if err != nil {
		if terr := l.truncate(l.size); terr != nil {
			l.broken = fmt.Errorf("%s: a failed append could not be undone (%v): %w", l.path(), terr, err)
		}
		return fmt.Errorf("append to %s: %w", l.path(), err)
	}
	l.size += int64(len(rec))
	l.records++
	return nil
}

// truncate cuts the file to size and fsyncs it (the handle appends, so the
// next write lands at size).
func (l *entryLog) truncate(size int64) error {
	if err := l.f.Truncate(size); err != nil {
		return fmt.Errorf("truncate %s: %w", l.path(), err)
	}
	if err := durable.Fsync(l.f); err != nil {
		return fmt.Errorf("truncate %s: %w", l.path(), err)
	}
	return nil
}

// purgeRecord is the payload of a purge record.
type purgeRecord struct {
	KeepFrom int64 `json:"keep_from"`
}

// drop forgets the entries of batches below keepFrom.
func (l *entryLog) drop(keepFrom int64) {
	maps.DeleteFunc(l.offsets, func(b int64, _ OffsetEntry) bool { return b < keepFrom })
	maps.DeleteFunc(l.commits, func(b int64, _ CommitEntry) bool { return b < keepFrom })
}

// purge forgets the entries of batches below keepFrom: it appends a purge
// record, or rewrites the file once most of its records are dead.
func (l *entryLog) purge(keepFrom int64) error {
	l.drop(keepFrom)
	if live := len(l.offsets) + len(l.commits); l.records > 2*live+minRewrite {
		return l.rewrite()
	}
	rec, err := appendRecord(nil, kindPurge, purgeRecord{KeepFrom: keepFrom})
	if err != nil {
		return fmt.Errorf("encode purge record: %w", err)
	}
	return l.write(rec, false)
}

// rewrite replaces the file with the live entries, in batch order.
func (l *entryLog) rewrite() error {
	if l.broken != nil {
		return l.broken
	}
	var buf []byte
	batches := slices.Concat(slices.Collect(maps.Keys(l.offsets)), slices.Collect(maps.Keys(l.commits)))
	slices.Sort(batches)
	batches = slices.Compact(batches)
	var err error
	for _, b := range batches {
		if e, ok := l.offsets[b]; ok {
			if buf, err = appendRecord(buf, kindOffsets, e); err != nil {
				return fmt.Errorf("rewrite %s: %w", l.path(), err)
			}
		}
		if e, ok := l.commits[b]; ok {
			if buf, err = appendRecord(buf, kindCommit, e); err != nil {
				return fmt.Errorf("rewrite %s: %w", l.path(), err)
			}
		}
	}
	if err := fault.Err(FailCheckpointWrite); err != nil {
		return fmt.Errorf("rewrite %s: %w", l.path(), err)
	}
	if err := durable.WriteFile(l.dir, logName, buf); err != nil {
		return fmt.Errorf("rewrite %s: %w", l.path(), err)
	}
	// The old handle points at the replaced file.
	l.f.Close()
	f, err := os.OpenFile(l.path(), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		l.broken = fmt.Errorf("reopen %s after a rewrite: %w", l.path(), err)
		return l.broken
	}
	l.f, l.size, l.records = f, int64(len(buf)), len(l.offsets)+len(l.commits)
	return nil
}

func (l *entryLog) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
