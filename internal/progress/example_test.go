package progress_test

import (
	"os"

	"lakehouse/internal/progress"
)

// Off a terminal, work shorter than ten seconds prints its last line only.
func Example() {
	r := progress.Display{W: os.Stdout}.Start(progress.Task{Label: "copy", Total: 3, Unit: "files"})
	for range 3 {
		r.Add(1)
	}
	r.Finish()
	// Output: copy 3/3 files (100%) in 0:00
}
