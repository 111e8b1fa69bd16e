package stream

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lakehouse/internal/fault"
)

// FailCheckpointWrite is the failure point tests arm to make every
// checkpoint file write fail (as a full disk would) before it starts.
const FailCheckpointWrite = "stream.checkpoint-write"

// tempPrefix marks files being written; OpenCheckpoint removes leftovers.
const tempPrefix = ".tmp-"

// writeDurable replaces dir/name with data so that after a crash the file
// either holds the old content (or is absent) or all of data: temp file in
// the same directory, fsync, rename, fsync of the directory.
func writeDurable(dir, name string, data []byte) error {
	if err := fault.Err(FailCheckpointWrite); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	f, err := os.CreateTemp(dir, tempPrefix+name+"-*")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	ok = true
	return syncDir(dir)
}

// syncDir fsyncs a directory so that renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// mkdirDurable creates dir (and parents) and fsyncs the parent so the new
// entry survives a crash.
func mkdirDurable(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create dir: %w", err)
	}
	return syncDir(filepath.Dir(dir))
}

// removeTemps deletes temp files a crash left in dir.
func removeTemps(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("remove temp file: %w", err)
			}
		}
	}
	return nil
}
