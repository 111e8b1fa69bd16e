package replay

import (
	"bytes"
	"testing"

	"lakehouse/internal/sample"
)

// TestSampleIsTheEmbeddedRecording: Sample is the 50 events of
// internal/sample, read as a recording file would be.
func TestSampleIsTheEmbeddedRecording(t *testing.T) {
	rec, err := ReadRecording(bytes.NewReader(sample.JSONL()))
	if err != nil {
		t.Fatal(err)
	}
	got := Sample()
	if got.Len() != 50 || rec.Len() != 50 {
		t.Fatalf("Sample(): %d events, the file %d; want 50", got.Len(), rec.Len())
	}
	for i := range rec.Events {
		if !bytes.Equal(got.Events[i], rec.Events[i]) {
			t.Fatalf("event %d differs from the file's line", i)
		}
	}
}
