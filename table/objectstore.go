package table

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	s3io "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// ObjectStoreRequests counts the HTTP requests a Lake sent to its S3
// warehouse, by the kind S3 bills: List is a GET that lists (a bucket
// listing or the multipart uploads in progress), Get every other GET.
// Retries are requests too, and are counted.
type ObjectStoreRequests struct {
	Put    int64 `json:"put"`
	Post   int64 `json:"post"`
	Get    int64 `json:"get"`
	Head   int64 `json:"head"`
	List   int64 `json:"list"`
	Delete int64 `json:"delete"`
	Other  int64 `json:"other,omitempty"`
}

// Total is every request counted.
func (r ObjectStoreRequests) Total() int64 {
	return r.Put + r.Post + r.Get + r.Head + r.List + r.Delete + r.Other
}

// Sub is r minus an earlier count o.
func (r ObjectStoreRequests) Sub(o ObjectStoreRequests) ObjectStoreRequests {
	return ObjectStoreRequests{Put: r.Put - o.Put, Post: r.Post - o.Post, Get: r.Get - o.Get, Head: r.Head - o.Head,
		List: r.List - o.List, Delete: r.Delete - o.Delete, Other: r.Other - o.Other}
}

// ByMethod is the count as label -> requests ("PUT", "POST", "GET",
// "HEAD", "LIST", "DELETE", "OTHER"), every label present.
func (r ObjectStoreRequests) ByMethod() map[string]int64 {
	return map[string]int64{"PUT": r.Put, "POST": r.Post, "GET": r.Get, "HEAD": r.Head,
		"LIST": r.List, "DELETE": r.Delete, "OTHER": r.Other}
}

// S3 Standard's request list prices (us-east-1), USD per 1,000 requests:
// PUT, COPY, POST and LIST at the first rate, GET, HEAD and every other
// request but DELETE at the second; DELETE is free.
const (
	S3PricesAsOf         = "2026-12"
	S3PutPostListPer1000 = 0.005
	S3GetHeadPer1000     = 0.0004
)

// USD is what the requests cost at S3 Standard's list prices.
func (r ObjectStoreRequests) USD() float64 {
	return float64(r.Put+r.Post+r.List)*S3PutPostListPer1000/1000 +
		float64(r.Get+r.Head+r.Other)*S3GetHeadPer1000/1000
}

// requestCounter is a Lake's count; its methods are safe for concurrent use.
type requestCounter struct {
	put, post, get, head, list, del, other atomic.Int64
}

func (c *requestCounter) count(r *http.Request) {
	switch r.Method {
	case http.MethodPut:
		c.put.Add(1)
	case http.MethodPost:
		c.post.Add(1)
	case http.MethodHead:
		c.head.Add(1)
	case http.MethodDelete:
		c.del.Add(1)
	case http.MethodGet:
		if isList(r) {
			c.list.Add(1)
		} else {
			c.get.Add(1)
		}
	default:
		c.other.Add(1)
	}
}

// isList reports whether a GET lists: ListObjects(V2) always sends a
// list-type, prefix or delimiter, ListMultipartUploads "uploads", and a
// GET on a bucket itself (no key) lists it in every style.
func isList(r *http.Request) bool {
	q := r.URL.Query()
	for _, k := range []string{"list-type", "prefix", "delimiter", "uploads", "versions"} {
		if q.Has(k) {
			return true
		}
	}
	return false
}

func (c *requestCounter) snapshot() ObjectStoreRequests {
	return ObjectStoreRequests{Put: c.put.Load(), Post: c.post.Load(), Get: c.get.Load(), Head: c.head.Load(),
		List: c.list.Load(), Delete: c.del.Load(), Other: c.other.Load()}
}

// countingClient counts every request the AWS SDK sends through it.
type countingClient struct {
	next aws.HTTPClient
	c    *requestCounter
}

func (cc countingClient) Do(r *http.Request) (*http.Response, error) {
	cc.c.count(r)
	return cc.next.Do(r)
}

// s3Requests is an S3 warehouse's AWS configuration with its HTTP client
// counting. iceberg-go's S3 file IO builds a new client on every LoadFS,
// from the AWS configuration the context carries if any; every LoadFS of
// the Lake passes this one (withS3), so every request to the warehouse goes
// through one counter, and the file IOs share one connection pool instead
// of dialling anew for each.
type s3Requests struct {
	cfg *aws.Config
	n   *requestCounter
}

// newS3Requests builds the counting configuration from the warehouse's
// file IO properties (nil for a warehouse not on S3).
func newS3Requests(ctx context.Context, wh string, props iceberg.Properties) (*s3Requests, error) {
	if !isS3(wh) {
		return nil, nil
	}
	cfg, err := s3io.ParseAWSConfig(ctx, props)
	if err != nil {
		return nil, err
	}
	next := cfg.HTTPClient
	if next == nil {
		// As iceberg-go's own S3 client: a pool big enough for a compaction's
		// parallel reads.
		next = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
		})
	}
	n := &requestCounter{}
	cfg.HTTPClient = countingClient{next: next, c: n}
	return &s3Requests{cfg: cfg, n: n}, nil
}

// with returns ctx carrying the counting configuration (ctx itself for nil).
func (s *s3Requests) with(ctx context.Context) context.Context {
	if s == nil {
		return ctx
	}
	return utils.WithAwsConfig(ctx, s.cfg)
}

// IsObjectStore reports whether a warehouse URI names S3 (s3://, s3a://,
// s3n://), where every request is billed.
func IsObjectStore(wh string) bool { return isS3(wh) }

func isS3(wh string) bool {
	for _, p := range []string{"s3://", "s3a://", "s3n://"} {
		if len(wh) >= len(p) && wh[:len(p)] == p {
			return true
		}
	}
	return false
}

// ObjectStoreRequests returns the requests this Lake sent to its S3
// warehouse since it opened, with ok true; ok is false when nothing is
// counted: a warehouse on local disk, or tables in a REST catalog (whose
// file IO iceberg-go builds by itself). Readers that copy data files to
// local disk first (the marts' DuckDB, queries) read through the Lake
// (LocalFile), so their downloads are counted; other processes' Lakes
// (query, verify) count their own.
func (l *Lake) ObjectStoreRequests() (ObjectStoreRequests, bool) {
	if l.s3 == nil {
		return ObjectStoreRequests{}, false
	}
	return l.s3.n.snapshot(), true
}
