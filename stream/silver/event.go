package silver

import (
	"encoding/hex"
	"hash/fnv"
	"time"

	"lakehouse/internal/recentchange"
)

// edit is one parsed edit or new event, as silver.edits stores it, with
// its dedup key.
type edit struct {
	recentchange.Edit
	Key idKey
}

// errSkip marks an event of a type silver does not keep.
var errSkip = recentchange.ErrSkip

// parseEdit parses raw, which the broker received at received, with
// recentchange.ParseEdit (errSkip for events of other types, a descriptive
// error for anything silver cannot store) and keys it.
func parseEdit(raw []byte, received time.Time, maxAhead time.Duration) (edit, error) {
	e, err := recentchange.ParseEdit(raw, received, maxAhead)
	if err != nil {
		return edit{}, err
	}
	return edit{Edit: e, Key: keyOf(e.ID)}, nil
}

// byteDelta is length_new - length_old, or length_new for a new page.
func (e *edit) byteDelta() int64 {
	if e.LengthOld == nil {
		return e.LengthNew
	}
	return e.LengthNew - *e.LengthOld
}

// idKey is the dedup key of a meta.id: the 16 bytes of a UUID, or for any
// other id a 128-bit FNV-1a hash of it with the top bit pattern of no UUID
// version (so the two spaces cannot meet by construction).
type idKey [16]byte

func keyOf(id string) idKey {
	var k idKey
	if len(id) == 36 && id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-' {
		s := id[0:8] + id[9:13] + id[14:18] + id[19:23] + id[24:36]
		if n, err := hex.Decode(k[:], []byte(s)); err == nil && n == 16 && k[6]>>4 != 0 {
			return k
		}
	}
	h := fnv.New128a()
	h.Write([]byte(id))
	h.Sum(k[:0])
	k[6] &= 0x0f // version nibble 0: no UUID keyOf accepts has it
	return k
}
