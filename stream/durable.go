package stream

import (
	"fmt"
	"path/filepath"

	"lakehouse/internal/durable"
	"lakehouse/internal/fault"
)

// FailCheckpointWrite is the failure point tests arm to make every
// checkpoint file write fail (as a full disk would) before it starts.
const FailCheckpointWrite = "stream.checkpoint-write"

// tempPrefix marks files being written; OpenCheckpoint removes leftovers.
const tempPrefix = durable.TempPrefix

// writeDurable replaces dir/name with data so that after a crash the file
// either holds the old content (or is absent) or all of data
// (durable.WriteFile: temp file, fsync, rename, fsync of the directory).
func writeDurable(dir, name string, data []byte) error {
	if err := fault.Err(FailCheckpointWrite); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return durable.WriteFile(dir, name, data)
}

// mkdirDurable creates dir and its missing parents and fsyncs the parent of
// each directory it created, so every new entry survives a crash.
func mkdirDurable(dir string) error {
	parents, err := durable.MkdirAll(dir)
	if err != nil {
		return fmt.Errorf("create dir: %w", err)
	}
	return durable.SyncDirs(parents)
}

// removeTemps deletes temp files a crash left in dir.
func removeTemps(dir string) error { return durable.RemoveTemps(dir) }
