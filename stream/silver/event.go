package silver

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"lakehouse/internal/recentchange"
)

// rawEvent is the part of a recentchange event silver reads. Pointers tell
// an absent field (null fields are omitted on the wire) from a zero value.
type rawEvent struct {
	Meta struct {
		ID string `json:"id"`
		DT string `json:"dt"`
	} `json:"meta"`
	Type       string  `json:"type"`
	Namespace  *int32  `json:"namespace"`
	Title      *string `json:"title"`
	Comment    *string `json:"comment"`
	Timestamp  *int64  `json:"timestamp"`
	User       *string `json:"user"`
	Bot        *bool   `json:"bot"`
	Minor      *bool   `json:"minor"`
	Length     *oldNew `json:"length"`
	Revision   *oldNew `json:"revision"`
	ServerName *string `json:"server_name"`
	Wiki       *string `json:"wiki"`

	seen seen // fields scanEvent has read (not part of the event)
}

type oldNew struct {
	Old *int64 `json:"old"`
	New *int64 `json:"new"`

	seen seen
}

// edit is one parsed edit or new event, as silver.edits stores it.
type edit struct {
	ID         string
	Key        idKey
	EventTime  int64 // Unix microseconds
	IntakeTime int64 // Unix microseconds
	Wiki       string
	Type       string
	Namespace  int32
	Title      string
	User       string
	Bot        bool
	Minor      *bool
	LengthOld  *int64
	LengthNew  int64
	RevOld     *int64
	RevNew     int64
	Comment    *string
	ServerName string
}

// errSkip marks an event of a type silver does not keep.
var errSkip = errors.New("not an edit or new event")

// parseEdit parses raw, which the broker received at received (bronze's
// broker_ts; zero if unknown). It returns errSkip for well-formed events of
// other types, and a descriptive error for anything silver cannot store,
// including an edit whose times break recentchange.CheckTimes with margin
// maxAhead: the contract refuses those at ingest, so this only meets events
// that an earlier contract (or a different margin) let into bronze, and it
// keeps them from moving the watermark.
func parseEdit(raw []byte, received time.Time, maxAhead time.Duration) (edit, error) {
	var ev rawEvent
	if !scanEvent(raw, &ev) {
		ev = rawEvent{}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return edit{}, fmt.Errorf("decode event: %w", err)
		}
	}
	return editOf(&ev, received, maxAhead)
}

// editOf checks a decoded event and builds its edit.
func editOf(ev *rawEvent, received time.Time, maxAhead time.Duration) (edit, error) {
	if ev.Type != "edit" && ev.Type != "new" {
		if ev.Type == "" {
			return edit{}, errors.New("decode event: no type")
		}
		return edit{}, errSkip
	}
	missing := func(name string) (edit, error) {
		return edit{}, fmt.Errorf("decode %s event %q: missing %s", ev.Type, ev.Meta.ID, name)
	}
	switch {
	case ev.Meta.ID == "":
		return missing("meta.id")
	case ev.Timestamp == nil:
		return missing("timestamp")
	case ev.Wiki == nil:
		return missing("wiki")
	case ev.User == nil:
		return missing("user")
	case ev.Title == nil:
		return missing("title")
	case ev.Namespace == nil:
		return missing("namespace")
	case ev.Bot == nil:
		return missing("bot")
	case ev.ServerName == nil:
		return missing("server_name")
	case ev.Length == nil || ev.Length.New == nil:
		return missing("length.new")
	case ev.Revision == nil || ev.Revision.New == nil:
		return missing("revision.new")
	}
	dt, err := recentchange.ParseDT(ev.Meta.DT)
	if err != nil {
		return edit{}, fmt.Errorf("decode %s event %q: meta.dt: %w", ev.Type, ev.Meta.ID, err)
	}
	// Bounded times also keep the microseconds below from overflowing.
	if err := recentchange.CheckTimes(*ev.Timestamp, dt, received, maxAhead); err != nil {
		return edit{}, fmt.Errorf("decode %s event %q: %w", ev.Type, ev.Meta.ID, err)
	}
	return edit{
		ID:         ev.Meta.ID,
		Key:        keyOf(ev.Meta.ID),
		EventTime:  *ev.Timestamp * 1_000_000,
		IntakeTime: dt.UnixMicro(),
		Wiki:       *ev.Wiki,
		Type:       ev.Type,
		Namespace:  *ev.Namespace,
		Title:      *ev.Title,
		User:       *ev.User,
		Bot:        *ev.Bot,
		Minor:      ev.Minor,
		LengthOld:  ev.Length.Old,
		LengthNew:  *ev.Length.New,
		RevOld:     ev.Revision.Old,
		RevNew:     *ev.Revision.New,
		Comment:    ev.Comment,
		ServerName: *ev.ServerName,
	}, nil
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
