package sample

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEvents: the 50 events, each a JSON object of the recentchange stream,
// and changing what Events or JSONL returned does not change the next call.
func TestEvents(t *testing.T) {
	evs := Events()
	if len(evs) != 50 {
		t.Fatalf("%d events, want 50", len(evs))
	}
	for i, e := range evs {
		var m struct {
			Meta struct {
				Stream string `json:"stream"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(e, &m); err != nil || m.Meta.Stream != "mediawiki.recentchange" {
			t.Fatalf("event %d: stream %q, %v", i, m.Meta.Stream, err)
		}
	}
	evs[0][0] = 'x'
	b := JSONL()
	b[0] = 'x'
	if Events()[0][0] != '{' || JSONL()[0] != '{' {
		t.Fatal("a caller's change reached the embedded recording")
	}
	if !bytes.Equal(bytes.Join(Events(), []byte("\n")), bytes.TrimSpace(JSONL())) {
		t.Fatal("Events and JSONL disagree")
	}
}
