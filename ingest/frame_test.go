package ingest

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	sse "github.com/tmaxmax/go-sse"
	"golang.org/x/net/http/httpguts"
)

// guardOut runs in through a frameGuard, read in chunks of size chunk (0:
// all at once), and returns what it passes on and the ids it refused.
func guardOut(t *testing.T, in string, maxFrame, maxID, chunk int) (string, []string) {
	t.Helper()
	var refused []string
	var r io.Reader = strings.NewReader(in)
	if chunk > 0 {
		r = &chunkReader{s: in, n: chunk}
	}
	g := newFrameGuard(r, maxFrame, maxID, func(prefix []byte, n int, reason string) {
		refused = append(refused, fmt.Sprintf("%s (%d bytes): %s", prefix[:min(len(prefix), 8)], n, reason))
	})
	out, err := io.ReadAll(g)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), refused
}

// chunkReader returns s n bytes per Read.
type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}

// TestFrameGuard: the guard passes well-formed streams through byte for
// byte (any line ends, any read boundaries), drops id lines that cannot be
// a position (with their line end, so the frame stays whole), and cuts a
// frame over the limit into an oversizedType event holding its start.
func TestFrameGuard(t *testing.T) {
	long := strings.Repeat("x", 300)
	cutEvent := "\nevent: " + oversizedType + "\n\n"
	tests := []struct {
		name    string
		in      string
		want    string
		refused int
	}{
		{"plain", ":ok\n\nevent: message\nid: [1]\ndata: {}\n\n", "", 0},
		{"CRLF", "event: message\r\nid: [1]\r\ndata: {}\r\n\r\n", "", 0},
		{"CR", "event: message\rid: [1]\rdata: {}\r\r", "", 0},
		{"id without colon, unknown fields, i-lines", "id\nidx: 1\ni\nidentity: x\ndata: a\n\n", "", 0},
		{"empty id", "id:\ndata: a\n\nid: \ndata: b\n\n", "", 0},
		{"control character in id", "id: [1]\ndata: a\n\nid: a\x01b\ndata: b\n\n",
			"id: [1]\ndata: a\n\ndata: b\n\n", 1},
		{"control character in id, CRLF", "id: a\x01b\r\ndata: b\r\n\r\n", "data: b\r\n\r\n", 1},
		{"NUL in id", "id: a\x00\ndata: b\n\n", "data: b\n\n", 1},
		{"leading blanks in id", "id:  [1]\ndata: b\n\n", "data: b\n\n", 1},
		{"trailing blank in id", "id: [1] \ndata: b\n\n", "data: b\n\n", 1},
		{"id over the limit", "id: " + strings.Repeat("i", 33) + "\ndata: b\n\n", "data: b\n\n", 1},
		{"id at the limit", "id: " + strings.Repeat("i", 32) + "\ndata: b\n\n", "", 0},
		{"frame over the limit: id first, data cut", "id: [7]\ndata: " + long + "\n\ndata: next\n\n",
			"id: [7]\ndata: " + long[:200-len("id: [7]\ndata: ")] + cutEvent + "data: next\n\n", 0},
		{"frame over the limit with CRLF, ending at once", "data: " + long + long + long + "\r\n\r\ndata: next\r\n\r\n",
			"data: " + (long + long)[:200-len("data: ")] + cutEvent + "data: next\r\n\r\n", 0},
		{"frame over the limit, id after the cut", "data: " + long + long + "\nid: [8]\n\ndata: next\n\n",
			"data: " + (long + long)[:200-len("data: ")] + cutEvent + "data: next\n\n", 0},
		{"frame of many short lines", strings.Repeat("data: a\n", 40) + "\ndata: next\n\n",
			strings.Repeat("data: a\n", 25) + cutEvent[1:] + "data: next\n\n", 0},
		// 195 bytes of comments, then an id line the limit cuts: it is never
		// passed on (nor refused: it goes with its frame).
		{"cut while holding an id line", strings.Repeat(":c\n", 65) + "id: [123456]\ndata: x\n\ndata: next\n\n",
			strings.Repeat(":c\n", 65) + cutEvent[1:] + "data: next\n\n", 0},
	}
	for _, tc := range tests {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		for _, chunk := range []int{0, 1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/chunk %d", tc.name, chunk), func(t *testing.T) {
				got, refused := guardOut(t, tc.in, 200, 32, chunk)
				if got != want {
					t.Errorf("passed on:\n got %q\nwant %q", got, want)
				}
				if len(refused) != tc.refused {
					t.Errorf("refused ids: got %q, want %d", refused, tc.refused)
				}
			})
		}
	}
}

// TestFrameGuardWithGoSSE: go-sse's parser, reading through the guard,
// never fails on an oversized frame: it sees the frame's start as an
// oversizedType event carrying the frame's id, then the next events.
func TestFrameGuardWithGoSSE(t *testing.T) {
	big := strings.Repeat("y", 10_000)
	stream := ":ok\n\nevent: message\nid: [1]\ndata: {\"a\":1}\n\n" +
		"event: message\nid: [2]\ndata: " + big + "\n\n" +
		"event: message\nid: \x01bad\ndata: {\"a\":3}\n\n" +
		"event: message\nid: [4]\ndata: {\"a\":4}\n\n"
	const limit = 4096
	for _, chunk := range []int{0, 1, 5, 4096} {
		t.Run(fmt.Sprintf("chunk %d", chunk), func(t *testing.T) {
			var r io.Reader = strings.NewReader(stream)
			if chunk > 0 {
				r = iotest.OneByteReader(&chunkReader{s: stream, n: chunk})
			}
			g := newFrameGuard(r, limit, DefaultMaxIDBytes, nil)
			var got []string
			for ev, err := range sse.Read(g, &sse.ReadConfig{MaxEventSize: limit + 4096}) {
				if err != nil {
					t.Fatalf("go-sse: %v", err)
				}
				got = append(got, fmt.Sprintf("%s|%s|%d", ev.Type, ev.LastEventID, len(ev.Data)))
			}
			kept := limit - len("event: message\nid: [2]\ndata: ")
			want := []string{"message|[1]|7", fmt.Sprintf("%s|[2]|%d", oversizedType, kept), "message|[2]|7", "message|[4]|7"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("events:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestBadIDReason(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool // refused
	}{
		{`[{"topic":"eqiad.mediawiki.recentchange","partition":0,"timestamp":1772120977001}]`, false},
		{"", false},
		{"caf\xc3\xa9", false}, // obs-text is a valid header value
		{"a\tb", false},
		{"a\x01b", true},
		{"a\x7fb", true},
		{"a\nb", true},
		{" a", true},
		{"a\t", true},
		{strings.Repeat("a", DefaultMaxIDBytes), false},
		{strings.Repeat("a", DefaultMaxIDBytes+1), true},
	} {
		if got := badIDReason([]byte(tc.id), DefaultMaxIDBytes) != ""; got != tc.want {
			t.Errorf("badIDReason(%q): refused %v, want %v", tc.id[:min(len(tc.id), 20)], got, tc.want)
		}
	}
}

// TestValidHeaderValueIsHttpguts: the id check's header rule is
// httpguts.ValidHeaderFieldValue, byte for byte, on strings and bytes.
func TestValidHeaderValueIsHttpguts(t *testing.T) {
	for c := 0; c < 256; c++ {
		v := "a" + string([]byte{byte(c)}) + "b"
		want := httpguts.ValidHeaderFieldValue(v)
		if got := validHeaderValue(v); got != want {
			t.Errorf("byte %#x in a string: valid %v, httpguts %v", c, got, want)
		}
		if got := validHeaderValue([]byte(v)); got != want {
			t.Errorf("byte %#x in bytes: valid %v, httpguts %v", c, got, want)
		}
	}
}
