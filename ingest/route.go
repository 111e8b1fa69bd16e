package ingest

import (
	"fmt"
	"time"
	"unsafe"

	"lakehouse/broker"
)

// received is one SSE event as the client read it.
type received struct {
	id   string    // the SSE id in force for this event (stream position)
	data string    // the data field, lines joined with "\n" as the SSE spec says
	at   time.Time // when the client read it: the broker record's timestamp
	// tooLarge: the frame was cut (frameGuard); data is what was read of it.
	tooLarge bool
}

// routed is where one received event goes.
type routed struct {
	rec    broker.Record
	canary bool // skipped: no record
	dlq    bool
	id     string
	size   int // bytes of the event's data
}

// router turns received events into broker records. It is safe for
// concurrent use.
type router struct {
	contract *Contract
	topic    string
	dlqTopic string
	url      string
	maxBytes int
}

func (r *router) route(ev received) routed {
	out := routed{id: ev.id, size: len(ev.data)}
	// The record's value is the event data itself, not a copy: nothing
	// writes to a Record's bytes (the broker only copies them into its
	// transaction), and ev.data is not used after this.
	value := readOnlyBytes(ev.data)
	if ev.tooLarge {
		return r.dead(out, ev, value, fmt.Errorf("%w: the frame passed the read limit; its data up to the limit is kept", ErrFrameTooLarge))
	}
	if len(value) > r.maxBytes {
		return r.dead(out, ev, value, fmt.Errorf("%w: %d bytes > limit %d", ErrOversized, len(value), r.maxBytes))
	}
	e, err := r.contract.CheckAt(value, ev.at)
	if err != nil {
		return r.dead(out, ev, value, err)
	}
	if e.Canary() {
		out.canary = true
		return out
	}
	out.rec = broker.Record{
		Topic:     r.topic,
		Partition: broker.AnyPartition,
		Key:       readOnlyBytes(e.ID), // e.ID is already a copy
		Value:     value,
		Timestamp: ev.at,
	}
	return out
}

func (r *router) dead(out routed, ev received, value []byte, reason error) routed {
	out.dlq = true
	out.rec = broker.Record{
		Topic:     r.dlqTopic,
		Partition: 0,
		Value:     value, // untouched
		Timestamp: ev.at,
		Headers: []broker.Header{
			{Key: HeaderReason, Value: []byte(reason.Error())},
			{Key: HeaderSourceID, Value: []byte(ev.id)},
			{Key: HeaderSourceURL, Value: []byte(r.url)},
		},
	}
	return out
}

// readOnlyBytes returns s's bytes without copying them. The result must
// never be written to.
func readOnlyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
