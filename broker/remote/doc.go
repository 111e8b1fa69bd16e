// Package remote serves a broker.Log read-only over HTTP (Handler) and
// reads a log so served (Dial). It is how the commands that read the
// broker (verify, topics) read the embedded broker of an appliance that is
// running: broker.db is open in that process, and bbolt lets no other
// process open it beside a writer, so the appliance serves its reads to
// them on its local endpoint (package main: appliance.json).
//
// Only reads cross the wire: Topics, Offsets, Meta and Read; Append and
// CreateTopic of a dialed log fail with ErrReadOnly, and its Wait polls
// the offsets. Errors keep their identity: a Read before the start of a
// partition is broker.ErrOffsetTrimmed on both sides, an unknown topic
// broker.ErrUnknownTopic, and so on.
//
// What survives a crash: nothing is stored here. A reader whose appliance
// stops sees its requests fail (the server is gone), never a wrong record.
package remote
