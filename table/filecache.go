package table

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// DefaultFileCacheBytes is the size the file cache trims itself to
// (Config.FileCacheBytes when 0).
const DefaultFileCacheBytes = 1 << 30

// fileCacheMinAge is the youngest copy the cache trims: a reader attaches
// the copies it asked for and reads them in the next seconds (a marts
// refresh, a query), so a copy used within this age may still be read.
const fileCacheMinAge = 10 * time.Minute

// fileCache keeps local copies of a remote warehouse's data files, for
// readers that read only local files (DuckDB without its httpfs extension,
// which is not available offline). Data files are immutable once written,
// so a copy never goes stale; each is named by a hash of its URI. Copies
// are written to a temporary name and renamed, so a crash leaves no
// partial copy under a real name (temporary ones are removed at start).
// Nothing in it needs to survive a crash: it is a cache.
type fileCache struct {
	mu    sync.Mutex
	dir   string // "" until first use
	temp  bool   // dir was made for this Lake (read-only): removed on close
	base  string // where dir goes ("" for a temporary directory)
	max   int64
	props map[string]string // the warehouse's file IO settings
	s3    *s3Requests       // counts the downloads' requests (nil: none)
}

// LocalFile returns a local path holding the data file p names: p itself
// for a local warehouse; for a remote one (s3://) a copy in the lake's file
// cache (<data>/cache/files, or a temporary directory for a read-only
// Lake), downloaded the first time. The cache is trimmed to
// Config.FileCacheBytes by removing the copies least recently asked for,
// never one asked for in the last ten minutes.
func (l *Lake) LocalFile(ctx context.Context, p string) (string, error) {
	if !strings.Contains(p, "://") || strings.HasPrefix(p, "file:") {
		return localName(p)
	}
	return l.files.get(ctx, p)
}

func newFileCache(cfg Config, props map[string]string) *fileCache {
	c := &fileCache{max: cfg.FileCacheBytes, props: props}
	if c.max <= 0 {
		c.max = DefaultFileCacheBytes
	}
	if !cfg.ReadOnly {
		c.base = filepath.Join(cfg.Dir, "cache", "files")
	}
	return c
}

func (c *fileCache) get(ctx context.Context, uri string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.open(); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(uri))
	local := filepath.Join(c.dir, hex.EncodeToString(sum[:12])+"-"+path.Base(uri))
	now := time.Now()
	if err := os.Chtimes(local, now, now); err == nil {
		return local, nil // mtime: when it was last asked for
	}
	if err := c.download(ctx, uri, local); err != nil {
		return "", err
	}
	c.trim(now)
	return local, nil
}

// open makes the cache directory and removes partial copies of a crash.
func (c *fileCache) open() error {
	if c.dir != "" {
		return nil
	}
	if c.base == "" {
		d, err := os.MkdirTemp("", "lakehouse-files-")
		if err != nil {
			return fmt.Errorf("file cache: %w", err)
		}
		c.dir, c.temp = d, true
		return nil
	}
	if err := os.MkdirAll(c.base, 0o755); err != nil {
		return fmt.Errorf("file cache: %w", err)
	}
	partial, _ := filepath.Glob(filepath.Join(c.base, "*.part"))
	for _, p := range partial {
		_ = os.Remove(p)
	}
	c.dir = c.base
	return nil
}

func (c *fileCache) download(ctx context.Context, uri, local string) error {
	fsys, err := iceio.LoadFS(c.s3.with(ctx), c.props, uri)
	if err != nil {
		return fmt.Errorf("file cache: %s: %w", uri, err)
	}
	src, err := fsys.Open(uri)
	if err != nil {
		return fmt.Errorf("file cache: %w", err)
	}
	defer src.Close()
	tmp := local + ".part"
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil { // removed while in use: made again
		return fmt.Errorf("file cache: %w", err)
	}
	dst, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("file cache: %w", err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, local)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("file cache: copy %s: %w", uri, err)
	}
	return nil
}

// trim removes the copies least recently asked for while the cache holds
// more than max bytes, sparing those asked for within fileCacheMinAge.
func (c *fileCache) trim(now time.Time) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type copyInfo struct {
		path string
		size int64
		used time.Time
	}
	var copies []copyInfo
	var total int64
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		copies = append(copies, copyInfo{filepath.Join(c.dir, e.Name()), fi.Size(), fi.ModTime()})
		total += fi.Size()
	}
	slices.SortFunc(copies, func(a, b copyInfo) int { return a.used.Compare(b.used) })
	for _, f := range copies {
		if total <= c.max || now.Sub(f.used) < fileCacheMinAge {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}

// close removes a temporary cache directory.
func (c *fileCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.temp {
		_ = os.RemoveAll(c.dir)
		c.dir, c.temp = "", false
	}
}
