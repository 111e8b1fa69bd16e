package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"lakehouse/broker"
)

// Paths under the base URL the handler is mounted at.
const (
	pathTopics  = "/topics"
	pathOffsets = "/offsets"
	pathMeta    = "/meta"
	pathRead    = "/read"
)

// maxRead caps the messages of one read request, whatever the caller asks:
// a response is held in memory on both sides.
const maxRead = 10_000

// errorBody is the JSON body of every error response.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// codes maps the broker's sentinel errors to wire codes and back, so a
// caller's errors.Is sees the same error through the wire.
var codes = []struct {
	code   string
	err    error
	status int
}{
	{"unknown_topic", broker.ErrUnknownTopic, 404},
	{"bad_partition", broker.ErrBadPartition, 400},
	{"offset_trimmed", broker.ErrOffsetTrimmed, 410},
	{"offset_out_of_range", broker.ErrOffsetOutOfRange, 416},
	{"closed", broker.ErrClosed, 503},
}

// Flags of one encoded message.
const (
	flagKey = 1 << iota
	flagTimestamp
)

// appendMessage encodes m after buf: flags, offset, timestamp (Unix
// nanoseconds, when set), key (when set), value, then each header's key
// and value; lengths and integers as varints.
func appendMessage(buf []byte, m broker.Message) []byte {
	var flags byte
	if m.Key != nil {
		flags |= flagKey
	}
	if !m.Timestamp.IsZero() {
		flags |= flagTimestamp
	}
	buf = append(buf, flags)
	buf = binary.AppendVarint(buf, m.Offset)
	if flags&flagTimestamp != 0 {
		buf = binary.AppendVarint(buf, m.Timestamp.UnixNano())
	}
	if flags&flagKey != 0 {
		buf = appendBytes(buf, m.Key)
	}
	buf = appendBytes(buf, m.Value)
	buf = binary.AppendUvarint(buf, uint64(len(m.Headers)))
	for _, h := range m.Headers {
		buf = appendBytes(buf, []byte(h.Key))
		buf = appendBytes(buf, h.Value)
	}
	return buf
}

func appendBytes(buf, b []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

var errFrame = errors.New("malformed message frame")

// decodeMessages decodes a read response of topic/partition.
func decodeMessages(b []byte, topic string, partition int) ([]broker.Message, error) {
	var out []broker.Message
	for len(b) > 0 {
		m := broker.Message{Topic: topic, Partition: partition}
		flags := b[0]
		b = b[1:]
		var ok bool
		if m.Offset, b, ok = varint(b); !ok {
			return nil, errFrame
		}
		if flags&flagTimestamp != 0 {
			var ns int64
			if ns, b, ok = varint(b); !ok {
				return nil, errFrame
			}
			m.Timestamp = time.Unix(0, ns)
		}
		if flags&flagKey != 0 {
			if m.Key, b, ok = bytesOf(b); !ok {
				return nil, errFrame
			}
		}
		if m.Value, b, ok = bytesOf(b); !ok {
			return nil, errFrame
		}
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return nil, errFrame
		}
		b = b[k:]
		for range n {
			var key, val []byte
			if key, b, ok = bytesOf(b); !ok {
				return nil, errFrame
			}
			if val, b, ok = bytesOf(b); !ok {
				return nil, errFrame
			}
			m.Headers = append(m.Headers, broker.Header{Key: string(key), Value: val})
		}
		out = append(out, m)
	}
	return out, nil
}

func varint(b []byte) (int64, []byte, bool) {
	v, k := binary.Varint(b)
	if k <= 0 {
		return 0, b, false
	}
	return v, b[k:], true
}

// bytesOf reads a length-prefixed byte string (a copy: b is the response
// buffer, which the caller may keep for the messages' lifetime anyway).
func bytesOf(b []byte) ([]byte, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, b, false
	}
	return b[k : k+int(n) : k+int(n)], b[k+int(n):], true
}

func wireError(code, msg string) error {
	for _, c := range codes {
		if c.code == code {
			return fmt.Errorf("%w (remote: %s)", c.err, msg)
		}
	}
	return fmt.Errorf("remote broker: %s", msg)
}
