package launch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/table"
)

// Bucket is the bucket of the in-memory S3 StartS3 serves.
const Bucket = "lake"

// StartKafka starts an in-process Kafka cluster (kfake, with
// transactions) on 127.0.0.1 and returns its kafka:// URL and the stop
// function. It outlives every kill of a child that connects to it.
func StartKafka() (string, func(), error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return "", nil, fmt.Errorf("start Kafka (kfake): %w", err)
	}
	return "kafka://" + strings.Join(c.ListenAddrs(), ","), c.Close, nil
}

// StartS3 serves an in-memory S3 (gofakes3) with Bucket on 127.0.0.1 and
// returns its endpoint URL and the stop function.
func StartS3() (string, func(), error) {
	mem := s3mem.New()
	if err := mem.CreateBucket(Bucket); err != nil {
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

// S3Env is the environment that points a child appliance at endpoint.
func S3Env(endpoint string) []string {
	return []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=prove", "AWS_SECRET_ACCESS_KEY=prove"}
}

// S3Config is the table.Config S3 settings of endpoint, for the harness's
// own reads of the child's lake.
func S3Config(endpoint string) table.S3Config {
	return table.S3Config{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: "prove", SecretAccessKey: "prove"}
}
