package recentchange

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
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

// Edit is one parsed edit or new event, as silver.edits stores it.
type Edit struct {
	ID         string
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

// ErrSkip marks an event of a type silver does not keep.
var ErrSkip = errors.New("not an edit or new event")

// ParseEdit is silver's parser: it parses raw, which the broker received
// at received (bronze's broker_ts; zero if unknown). It returns ErrSkip for
// well-formed events of other types, and a descriptive error for anything
// silver cannot store, including an edit whose times break CheckTimes with
// margin maxAhead: the contract refuses those at ingest, so this only meets
// events that an earlier contract (or a different margin) let into bronze,
// and it keeps them from moving the watermark. Silver (stream/silver) and
// the verifier (verify) both parse bronze with it, so they agree on which
// rows silver keeps.
func ParseEdit(raw []byte, received time.Time, maxAhead time.Duration) (Edit, error) {
	var ev rawEvent
	if !scanEvent(raw, &ev) {
		ev = rawEvent{}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return Edit{}, fmt.Errorf("decode event: %w", err)
		}
	}
	return editOf(&ev, received, maxAhead)
}

// editOf checks a decoded event and builds its edit.
func editOf(ev *rawEvent, received time.Time, maxAhead time.Duration) (Edit, error) {
	if ev.Type != "edit" && ev.Type != "new" {
		if ev.Type == "" {
			return Edit{}, errors.New("decode event: no type")
		}
		return Edit{}, ErrSkip
	}
	missing := func(name string) (Edit, error) {
		return Edit{}, fmt.Errorf("decode %s event %q: missing %s", ev.Type, ev.Meta.ID, name)
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
	dt, err := ParseDT(ev.Meta.DT)
	if err != nil {
		return Edit{}, fmt.Errorf("decode %s event %q: meta.dt: %w", ev.Type, ev.Meta.ID, err)
	}
	// Bounded times also keep the microseconds below from overflowing.
	if err := CheckTimes(*ev.Timestamp, dt, received, maxAhead); err != nil {
		return Edit{}, fmt.Errorf("decode %s event %q: %w", ev.Type, ev.Meta.ID, err)
	}
	return Edit{
		ID:         ev.Meta.ID,
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
