package remote

import (
	"reflect"
	"testing"
	"time"

	"lakehouse/broker"
)

// FuzzDecodeMessages: any response body decodes to messages or errFrame,
// never a panic, and what is encoded decodes to the same messages.
func FuzzDecodeMessages(f *testing.F) {
	m := broker.Message{Topic: "t", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte("v"),
		Timestamp: time.Unix(0, 1_700_000_000_123_456_789).UTC(), Headers: []broker.Header{{Key: "h", Value: []byte{}}}}
	f.Add(appendMessage(nil, m), int64(3), []byte("value"))
	f.Add([]byte{0xff, 0x01}, int64(-1), []byte(nil))
	f.Fuzz(func(t *testing.T, body []byte, off int64, value []byte) {
		_, _ = decodeMessages(body, "t", 2)
		want := broker.Message{Topic: "t", Partition: 2, Offset: off, Value: value}
		if want.Value == nil {
			want.Value = []byte{}
		}
		got, err := decodeMessages(appendMessage(nil, want), "t", 2)
		if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Fatalf("round trip of %+v: %+v %v", want, got, err)
		}
	})
}
