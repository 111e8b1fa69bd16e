package ocf

// This file is part of the lakehouse appliance's patch to twmb/avro v1.8.0
// (see ../PATCH.md). iceberg-go writes and reads every manifest and
// manifest list through this package, a few per table commit, and upstream
// allocates for each of them:
//   - a new compress/flate writer per block written (about 800 KB of hash
//     tables, zeroed on allocation: golang/go#32371),
//   - a new flate reader per block read (about 45 KB).
// At the real stream's rate the writers alone were a third of the bytes a
// commit allocates. Writers and readers are pooled here (Reset makes them
// as new); ../lakehouse_patch.go caches parsed schemas. Nothing else
// differs from upstream.

import (
	"compress/flate"
	"io"
	"sync"
)

// flateWriters holds a *sync.Pool of *flate.Writer per compression level.
var flateWriters sync.Map

func getFlateWriter(dst io.Writer, level int) (*flate.Writer, error) {
	if p, ok := flateWriters.Load(level); ok {
		if w, ok := p.(*sync.Pool).Get().(*flate.Writer); ok {
			w.Reset(dst)
			return w, nil
		}
	}
	return flate.NewWriter(dst, level)
}

func putFlateWriter(w *flate.Writer, level int) {
	p, _ := flateWriters.LoadOrStore(level, new(sync.Pool))
	p.(*sync.Pool).Put(w)
}

var flateReaders sync.Pool // of io.ReadCloser that are flate.Resetter

func getFlateReader(src io.Reader) io.ReadCloser {
	if r, ok := flateReaders.Get().(io.ReadCloser); ok {
		if r.(flate.Resetter).Reset(src, nil) == nil {
			return r
		}
	}
	return flate.NewReader(src)
}

func putFlateReader(r io.ReadCloser) {
	_ = r.Close() // a flate reader's Close only records that it is closed
	flateReaders.Put(r)
}
