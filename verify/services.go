package verify

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/table"
)

// The services a prove run can start in its own process, so that the
// appliance child connects to them over loopback and they outlive every
// kill: a Kafka cluster (kfake, with transactions), an S3 endpoint
// (gofakes3 in memory) and an Iceberg REST catalog (restcatalog.go).

// proveBucket is the bucket of a prove run's S3 warehouse.
const proveBucket = "lake"

// startKafka starts an in-process Kafka cluster on 127.0.0.1 and returns
// its kafka:// URL and the stop function.
func startKafka() (string, func(), error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return "", nil, fmt.Errorf("start Kafka (kfake): %w", err)
	}
	return "kafka://" + strings.Join(c.ListenAddrs(), ","), c.Close, nil
}

// startS3 serves an in-memory S3 with proveBucket on 127.0.0.1 and returns
// its endpoint URL and the stop function.
func startS3() (string, func(), error) {
	mem := s3mem.New()
	if err := mem.CreateBucket(proveBucket); err != nil {
		return "", nil, fmt.Errorf("start S3: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("start S3: %w", err)
	}
	srv := &http.Server{Handler: gofakes3.New(mem).Server(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// s3Env is the environment that points the appliance at endpoint.
func s3Env(endpoint string) []string {
	return []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=prove", "AWS_SECRET_ACCESS_KEY=prove"}
}

// s3Config is the table.Config S3 settings of endpoint.
func s3Config(endpoint string) table.S3Config {
	return table.S3Config{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: "prove", SecretAccessKey: "prove"}
}

// openBroker opens the broker a prove run's appliance used: its data
// directory's broker.db, or the Kafka cluster at url.
func openBroker(ctx context.Context, dir, url string) (broker.Log, error) {
	if url == "" {
		return broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	}
	cfg, err := kafka.ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg.ReadOnly = true // registers no producer: fences nobody
	return kafka.Open(ctx, cfg)
}
