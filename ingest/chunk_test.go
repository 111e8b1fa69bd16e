package ingest

import (
	"fmt"
	"testing"
)

// TestChunkEventsRoutesALoneEventItself: an event with nothing queued
// behind it reaches the batcher already routed, without a worker; events
// queued together go to the workers as one chunk, in order.
func TestChunkEventsRoutesALoneEventItself(t *testing.T) {
	events := make(chan received, 8)
	work := make(chan *chunk, 8)
	ordered := make(chan *chunk, 8)
	route := func(ev received) routed { return routed{id: "routed " + ev.id} }
	done := make(chan struct{})
	go func() {
		defer close(done)
		chunkEvents(events, work, ordered, route)
	}()

	events <- received{id: "1"}
	c := <-ordered
	select {
	case <-c.done:
	default:
		t.Fatal("a lone event reached the batcher unrouted")
	}
	if len(c.evs) != 1 || c.out[0].id != "routed 1" {
		t.Fatalf("lone chunk: %d events, out %+v", len(c.evs), c.out)
	}
	select {
	case w := <-work:
		t.Fatalf("a lone event was also handed to a worker: %+v", w.evs)
	default:
	}

	// A queue of events: the chunker takes what is queued at once, and a
	// chunk of more than one goes to a worker unrouted.
	close(events)
	<-done // the channels are closed; start over with a filled queue
	events, work, ordered = make(chan received, 8), make(chan *chunk, 8), make(chan *chunk, 8)
	for i := range 3 {
		events <- received{id: fmt.Sprint(i)}
	}
	close(events)
	chunkEvents(events, work, ordered, route)
	c, w := <-ordered, <-work
	if c != w || len(c.evs) != 3 || c.evs[2].id != "2" {
		t.Fatalf("queued events: ordered %+v, work %+v", c.evs, w.evs)
	}
	select {
	case <-c.done:
		t.Fatal("a chunk for the workers came routed")
	default:
	}
}
