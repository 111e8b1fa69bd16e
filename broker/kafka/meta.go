package kafka

import (
	"context"
	"errors"
	"fmt"

	"lakehouse/broker"
)

// metaChunk is how many meta records one Read takes while catching up.
const metaChunk = 10_000

// Meta implements broker.Log: the value of the last committed record with
// key in the meta topic, or nil, nil if there is none. It reads the meta
// topic read_committed up to its last stable offset, so an aborted or
// still open transaction's Meta is never returned. What it read stays in
// memory, so a call reads only what was appended since the last one.
func (l *Log) Meta(ctx context.Context, key string) ([]byte, error) {
	if err := l.checkOpen(); err != nil {
		return nil, err
	}
	l.metaMu.Lock()
	defer l.metaMu.Unlock()
	for restarted := false; ; {
		msgs, err := l.read(ctx, l.cfg.MetaTopic, 0, l.metaNext, metaChunk)
		if !restarted && (errors.Is(err, broker.ErrOffsetTrimmed) || errors.Is(err, broker.ErrOffsetOutOfRange)) {
			restarted = true
			// Retention (if someone set cleanup.policy=delete) or a
			// recreated topic: what is cached may be gone; start over.
			starts, lerr := l.listOffsets(ctx, map[string][]int32{l.cfg.MetaTopic: {0}}, -2)
			if lerr != nil {
				return nil, fmt.Errorf("meta %q: %w", key, lerr)
			}
			clear(l.metaVals)
			l.metaNext = starts[topicPartition{l.cfg.MetaTopic, 0}]
			continue
		}
		if errors.Is(err, broker.ErrUnknownTopic) && l.cfg.ReadOnly {
			return nil, nil // nothing was ever appended through a Log
		}
		if err != nil {
			return nil, fmt.Errorf("meta %q: %w", key, err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			// Copies: the cache must not pin fetch responses.
			l.metaVals[string(m.Key)] = append([]byte{}, m.Value...)
			l.metaNext = m.Offset + 1
		}
	}
	v, ok := l.metaVals[key]
	if !ok {
		return nil, nil
	}
	return append([]byte{}, v...), nil
}
