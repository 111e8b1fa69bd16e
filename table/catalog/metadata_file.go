package catalog

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"

	iceio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"
)

// writeMetadata writes meta to loc through the FileIO. The file is complete
// (and, with the table package's local IO, fsynced) when this returns. It
// returns the JSON it wrote (before compression).
func (c *Catalog) writeMetadata(ctx context.Context, meta icetable.Metadata, loc string) (raw []byte, err error) {
	fsys, err := c.fileIO(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("write metadata %s: %w", loc, err)
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("write metadata %s: file IO %T cannot write", loc, fsys)
	}
	codec := meta.Properties().Get(icetable.MetadataCompressionKey, icetable.MetadataCompressionDefault)
	out, err := wfs.Create(loc)
	if err != nil {
		return nil, fmt.Errorf("write metadata %s: %w", loc, err)
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write metadata %s: close: %w", loc, cerr)
		}
	}()
	var w io.Writer = out
	switch codec {
	case icetable.MetadataCompressionCodecNone:
	case icetable.MetadataCompressionCodecGzip:
		gz := gzip.NewWriter(out)
		defer func() {
			if cerr := gz.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("write metadata %s: gzip: %w", loc, cerr)
			}
		}()
		w = gz
	default:
		return nil, fmt.Errorf("write metadata %s: unsupported compression codec %q", loc, codec)
	}
	// Call the metadata's own MarshalJSON: encoding/json would re-scan and
	// compact its (already compact) output, which doubles the cost of the
	// largest write of every commit.
	if m, ok := meta.(json.Marshaler); ok {
		raw, err = m.MarshalJSON()
	} else {
		raw, err = json.Marshal(meta)
	}
	if err != nil {
		return nil, fmt.Errorf("write metadata %s: encode: %w", loc, err)
	}
	if _, err := w.Write(raw); err != nil {
		return nil, fmt.Errorf("write metadata %s: %w", loc, err)
	}
	return raw, nil
}

func (c *Catalog) removeQuietly(ctx context.Context, loc string) {
	fsys, err := c.fileIO(ctx, loc)
	if err != nil {
		return
	}
	_ = fsys.Remove(loc)
}
