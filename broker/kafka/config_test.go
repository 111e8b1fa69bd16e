package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker/kafka"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url      string
		seeds    string
		tls      bool
		insecure bool
		sasl     string // mechanism name, "" for none
		compress string // Config.Compression
		err      string // substring of the error, "" for none
	}{
		{url: "kafka://localhost:9092", seeds: "[localhost:9092]"},
		{url: "kafka://a:1,b:2,c:3/", seeds: "[a:1 b:2 c:3]"},
		{url: "kafka://broker", seeds: "[broker:9092]"},
		{url: "kafka://[::1]:9093,[fe80::1]", seeds: "[[::1]:9093 [fe80::1]:9092]"},
		{url: "KAFKA://h:1", seeds: "[h:1]"},
		{url: "kafkas://h:9093", seeds: "[h:9093]", tls: true},
		{url: "kafkas://h:9093?tls-insecure=1", seeds: "[h:9093]", tls: true, insecure: true},
		{url: "kafkas://h:9093?tls-insecure=0", seeds: "[h:9093]", tls: true},
		{url: "kafkas://u:p@h:9093", seeds: "[h:9093]", tls: true, sasl: "PLAIN"},
		{url: "kafka://u:p@h:1?sasl=plain", seeds: "[h:1]", sasl: "PLAIN"},
		{url: "kafka://u:p@h:1?sasl=scram-sha-256", seeds: "[h:1]", sasl: "SCRAM-SHA-256"},
		{url: "kafkas://u:p%40ss@h:1,i:2?sasl=SCRAM-SHA-512", seeds: "[h:1 i:2]", tls: true, sasl: "SCRAM-SHA-512"},
		{url: "kafka://u:p@ss@h:1", seeds: "[h:1]", sasl: "PLAIN"}, // the last @ ends the userinfo
		{url: "kafka://h:1?compression=none", seeds: "[h:1]", compress: "none"},
		{url: "kafkas://u:p@h:1?compression=ZSTD&sasl=plain", seeds: "[h:1]", tls: true, sasl: "PLAIN", compress: "zstd"},

		{url: "localhost:9092", err: "want kafka:// or kafkas://"},
		{url: "http://h:1", err: `unknown scheme "http"`},
		{url: "kafka://", err: "no host"},
		{url: "kafka://u:p@", err: "no host"},
		{url: "kafka://a:1,,b:2", err: "empty host"},
		{url: "kafka://:9092", err: "no host"},
		{url: "kafka://h:port", err: `bad port "port"`},
		{url: "kafka://h:0", err: `bad port "0"`},
		{url: "kafka://h:65536", err: `bad port "65536"`},
		{url: "kafka://h:1/path", err: "path not allowed"},
		{url: "kafka://h:1?sasl=gssapi", err: "needs user:password@"},
		{url: "kafka://u:p@h:1?sasl=gssapi", err: `unknown sasl mechanism "gssapi"`},
		{url: "kafka://u@h:1", err: "userinfo must be user:password"},
		{url: "kafka://:p@h:1", err: "empty user name"},
		{url: "kafka://h:1?tls-insecure=1", err: "needs the kafkas scheme"},
		{url: "kafkas://h:1?tls-insecure=maybe", err: "tls-insecure"},
		{url: "kafka://h:1?acks=0", err: `unknown query parameter "acks"`},
		{url: "kafka://h:1?sasl=plain&sasl=plain", err: "given 2 times"},
		{url: "kafka://h:1?compression=lz4", err: `unknown compression "lz4"`},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			cfg, err := kafka.ParseURL(tc.url)
			if tc.err != "" {
				if !errors.Is(err, kafka.ErrURL) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an ErrURL saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(cfg.Seeds); got != tc.seeds {
				t.Errorf("seeds: got %s, want %s", got, tc.seeds)
			}
			if (cfg.TLS != nil) != tc.tls || cfg.TLS != nil && cfg.TLS.InsecureSkipVerify != tc.insecure {
				t.Errorf("tls: got %+v, want tls %v insecure %v", cfg.TLS, tc.tls, tc.insecure)
			}
			got := ""
			if cfg.SASL != nil {
				got = cfg.SASL.Name()
			}
			if got != tc.sasl {
				t.Errorf("sasl: got %q, want %q", got, tc.sasl)
			}
			if cfg.Compression != tc.compress {
				t.Errorf("compression: got %q, want %q", cfg.Compression, tc.compress)
			}
		})
	}
}

// TestOpenRefusesUnknownCompression: Open names a codec it does not know
// before it dials.
func TestOpenRefusesUnknownCompression(t *testing.T) {
	l, err := kafka.Open(ctxT(t), kafka.Config{Seeds: []string{"127.0.0.1:1"}, Compression: "gzip"})
	if err == nil {
		l.Close()
		t.Fatal("Open with compression gzip succeeded")
	}
	if !strings.Contains(err.Error(), `unknown compression "gzip"`) {
		t.Fatalf("got %v, want unknown compression", err)
	}
}

// An error never shows the password.
func TestParseURLRedacts(t *testing.T) {
	_, err := kafka.ParseURL("kafka://user:secret@h:1?sasl=nope")
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "user:xxxxx@h:1") {
		t.Fatalf("got %v, want an error naming user:xxxxx@h:1 and not the password", err)
	}
}

// TestSASL opens a Log with a URL's credentials on a cluster that demands
// them, and fails with wrong ones.
func TestSASL(t *testing.T) {
	c := newCluster(t, kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "ingest", "s3cret"),
		kfake.Superuser("PLAIN", "plain", "pw"))
	addr := strings.Join(c.ListenAddrs(), ",")
	for _, u := range []string{
		"kafka://ingest:s3cret@" + addr + "?sasl=scram-sha-512",
		"kafka://plain:pw@" + addr,
	} {
		cfg, err := kafka.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		l, err := kafka.Open(ctxT(t), cfg)
		if err != nil {
			t.Fatalf("Open with %s: %v", u, err)
		}
		if err := l.CreateTopic(ctxT(t), "t", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctxT(t), batch("t", "x", 1, "1")); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	cfg, err := kafka.ParseURL("kafka://ingest:wrong@" + addr + "?sasl=scram-sha-512")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := kafka.Open(ctx, cfg)
	if err == nil {
		l.Close()
		t.Fatal("Open with a wrong password succeeded")
	}
	if ctx.Err() != nil {
		t.Fatalf("Open with a wrong password waited for its context: %v", err)
	}
}
