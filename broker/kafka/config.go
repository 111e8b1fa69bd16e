package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"lakehouse/broker"
)

// Defaults for Config. Open fills zero fields with them.
const (
	// DefaultTransactionalID is the producer identity: a second Log opened
	// with the same one fences the first (see broker.ErrFenced).
	DefaultTransactionalID = "lakehouse-ingest"
	// DefaultMetaTopic holds the Meta entries of Append, one compacted
	// record per key.
	DefaultMetaTopic = "__lakehouse_meta"
	// DefaultReplicationFactor asks the cluster for its default.
	DefaultReplicationFactor int16 = -1
	// DefaultClientID names the client in the brokers' logs and quotas.
	DefaultClientID = "lakehouse"
	// DefaultPort is the port of a seed given without one.
	DefaultPort = "9092"
	// DefaultCompression is the codec of the batches Append produces.
	DefaultCompression = CompressionZstd
)

// Compression codecs of Config.Compression.
const (
	// CompressionZstd compresses every batch Append produces with zstd
	// (Kafka 2.1 or later; Redpanda).
	CompressionZstd = "zstd"
	// CompressionNone produces uncompressed batches, for a cluster
	// that refuses zstd.
	CompressionNone = "none"
)

// Config says how to reach a Kafka cluster and how the Log uses it. Zero
// fields take the Default* values; only Seeds is required.
type Config struct {
	// Seeds are host:port addresses of some brokers of the cluster.
	Seeds []string
	// TLS, when not nil, dials the brokers with TLS (nil: plaintext).
	TLS *tls.Config
	// SASL, when not nil, authenticates every connection.
	SASL sasl.Mechanism
	// TransactionalID is the producer identity (DefaultTransactionalID).
	// Opening a Log fences every older producer with the same ID and
	// aborts its open transaction; two processes that must both append
	// need two IDs.
	TransactionalID string
	// MetaTopic is the compacted topic that holds Meta entries
	// (DefaultMetaTopic). Open creates it; Topics hides it.
	MetaTopic string
	// ReplicationFactor of the topics the Log creates
	// (DefaultReplicationFactor: the cluster's default).
	ReplicationFactor int16
	// MaxRecordBytes bounds len(Key)+len(Value) of one record
	// (broker.DefaultMaxRecordBytes).
	MaxRecordBytes int
	// ClientID names the client to the brokers (DefaultClientID).
	ClientID string
	// Compression is the codec of the batches Append produces:
	// CompressionZstd (DefaultCompression) or CompressionNone. The
	// brokers keep a batch as produced unless a topic's compression.type
	// says otherwise; readers decompress whatever they fetch.
	Compression string
	// ReadOnly opens the Log for reading only: Open neither registers
	// the TransactionalID (so it fences no producer, for example the one
	// of a running appliance) nor creates the meta topic, and Append and
	// CreateTopic fail with ErrReadOnly.
	ReadOnly bool
	// NoAppend opens the Log for a process that reads and creates topics
	// but never appends (the stream and marts roles): Open registers no
	// TransactionalID, so it fences no producer, and Append fails with
	// ErrReadOnly.
	NoAppend bool
}

func (c Config) withDefaults() Config {
	if c.TransactionalID == "" {
		c.TransactionalID = DefaultTransactionalID
	}
	if c.MetaTopic == "" {
		c.MetaTopic = DefaultMetaTopic
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = DefaultReplicationFactor
	}
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = broker.DefaultMaxRecordBytes
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	return c
}

// codec is the producer's codec for Config.Compression (defaults filled).
func (c Config) codec() (kgo.CompressionCodec, error) {
	switch c.Compression {
	case CompressionZstd:
		return kgo.ZstdCompression(), nil
	case CompressionNone:
		return kgo.NoCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown compression %q (known: %s, %s)", c.Compression, CompressionZstd, CompressionNone)
}

// Errors of this package; the Log also returns the broker package's.
var (
	// ErrURL: ParseURL was given something that is not a Kafka URL it
	// understands.
	ErrURL = errors.New("kafka: bad URL")
	// ErrReadOnly: a write to a Log opened with Config.ReadOnly.
	ErrReadOnly = errors.New("kafka: log opened read-only")
)

// ParseURL reads a cluster address of the form
//
//	kafka://host:port[,host:port...]           plaintext
//	kafkas://host:port[,host:port...]          TLS, verified with the system roots
//	kafkas://user:password@host:port?sasl=scram-sha-512
//
// A seed without a port gets DefaultPort. Userinfo turns on SASL with
// mechanism ?sasl=plain (the default), scram-sha-256 or scram-sha-512;
// user and password are percent-decoded. ?tls-insecure=1 (kafkas only)
// skips verifying the brokers' certificates: THIS IS UNSAFE, for test
// clusters only. ?compression=zstd|none sets Config.Compression. Anything else is an error wrapping ErrURL, whose text
// never shows the password. The other Config fields are left zero.
func ParseURL(s string) (Config, error) {
	shown := redact(s)
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("kafka url %q: %s: %w", shown, fmt.Sprintf(format, args...), ErrURL)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return bad("want kafka:// or kafkas://")
	}
	var cfg Config
	switch strings.ToLower(scheme) {
	case "kafka":
	case "kafkas":
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return bad("unknown scheme %q, want kafka or kafkas", scheme)
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	if strings.Contains(rawQuery, "#") {
		return bad("fragment not allowed")
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.Contains(rest, "/") {
		return bad("path not allowed")
	}
	var user, pass string
	hasUser := false
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		hasUser = true
		u, p, ok := strings.Cut(rest[:i], ":")
		var err error
		if user, err = url.PathUnescape(u); err != nil || user == "" {
			return bad("bad or empty user name")
		}
		if pass, err = url.PathUnescape(p); err != nil || !ok {
			return bad("userinfo must be user:password")
		}
		rest = rest[i+1:]
	}
	if rest == "" {
		return bad("no host")
	}
	for _, h := range strings.Split(rest, ",") {
		seed, err := parseSeed(h)
		if err != nil {
			return bad("%v", err)
		}
		cfg.Seeds = append(cfg.Seeds, seed)
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return bad("query: %v", err)
	}
	mech := ""
	for k, vs := range q {
		if len(vs) != 1 {
			return bad("query parameter %q given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "sasl":
			mech = strings.ToLower(v)
		case "tls-insecure":
			on, err := strconv.ParseBool(v)
			if err != nil {
				return bad("tls-insecure=%q, want 1 or 0", v)
			}
			if cfg.TLS == nil {
				return bad("tls-insecure needs the kafkas scheme")
			}
			cfg.TLS.InsecureSkipVerify = on
		case "compression":
			cfg.Compression = strings.ToLower(v)
			if _, err := cfg.codec(); err != nil {
				return bad("%v", err)
			}
		default:
			return bad("unknown query parameter %q (known: sasl, tls-insecure, compression)", k)
		}
	}
	if mech != "" && !hasUser {
		return bad("sasl=%s needs user:password@", mech)
	}
	if hasUser {
		switch mech {
		case "", "plain":
			cfg.SASL = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case "scram-sha-256":
			cfg.SASL = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case "scram-sha-512":
			cfg.SASL = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		default:
			return bad("unknown sasl mechanism %q (known: plain, scram-sha-256, scram-sha-512)", mech)
		}
	}
	return cfg, nil
}

// parseSeed checks one host[:port] and returns it as host:port.
func parseSeed(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty host in the host list")
	}
	if !strings.Contains(h, ":") || strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = net.JoinHostPort(strings.Trim(h, "[]"), DefaultPort)
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		return "", fmt.Errorf("host %q: %v", h, err)
	}
	if host == "" {
		return "", fmt.Errorf("no host in %q", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("bad port %q in %q", port, h)
	}
	return net.JoinHostPort(host, port), nil
}

// redact returns s with the password of its userinfo replaced, for error
// messages.
func redact(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	hosts, query, hasQuery := strings.Cut(rest, "?")
	i := strings.LastIndex(hosts, "@")
	if i < 0 {
		return s
	}
	user, _, hasPass := strings.Cut(hosts[:i], ":")
	if hasPass {
		user += ":xxxxx"
	}
	out := scheme + "://" + user + hosts[i:]
	if hasQuery {
		out += "?" + query
	}
	return out
}
