package replay

import (
	"bytes"
	"os"
	"testing"
)

// TestEmbeddedSampleMatchesTestdata: the sample the generator embeds is
// the recording ingest's tests read.
func TestEmbeddedSampleMatchesTestdata(t *testing.T) {
	b, err := os.ReadFile("../testdata/recentchange-sample-50.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, sampleJSONL) {
		t.Fatal("sample/recentchange-sample-50.jsonl differs from ingest/testdata/recentchange-sample-50.jsonl")
	}
	if got, want := Sample().Len(), 50; got != want {
		t.Fatalf("Sample(): got %d events, want %d", got, want)
	}
}
