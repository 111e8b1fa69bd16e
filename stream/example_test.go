package stream_test

import (
	"fmt"

	"lakehouse/stream"
)

// The bronze query's position, as stored in its offset log and in the
// bronze table's marker: the next offset to read, per partition.
func ExampleNextOffsets() {
	end := stream.NextOffsets{0: 120, 1: 98, 2: 101}
	fmt.Println(end.Offset(), end.Sum())
	back, _ := stream.ParsePartitionOffsets(end.Offset())
	fmt.Println(back[1])
	// Output:
	// {"0":120,"1":98,"2":101} 319
	// 98
}
