package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestNoInstanceMetadataUnlessAsked: with an S3 warehouse and no
// credentials, the appliance fails to start without asking the EC2
// instance metadata service (the AWS SDK's last resort, a request off the
// machine); with AWS_EC2_METADATA_DISABLED=false it asks, which also shows
// that the fake metadata server would have seen a request.
func TestNoInstanceMetadataUnlessAsked(t *testing.T) {
	var asked atomic.Int64
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "no instance here", http.StatusNotFound)
	}))
	defer imds.Close()
	s3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "access denied", http.StatusForbidden)
	}))
	defer s3.Close()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	t.Setenv("AWS_ENDPOINT_URL", s3.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	start := func() int {
		return run([]string{"run", "--data", filepath.Join(dir, "data"), "--warehouse", "s3://bucket/wh", "--no-ingest", "--http", "off"}, io.Discard, io.Discard)
	}

	t.Setenv(envIMDSDisabled, "") // not set by the user
	if code := start(); code != 1 {
		t.Fatalf("start without credentials: exit status %d, want 1", code)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the instance metadata service was asked %d times; nobody asked for it", n)
	}

	t.Setenv(envIMDSDisabled, "false") // the user asks for instance credentials
	_ = start()
	if asked.Load() == 0 {
		t.Errorf("inconclusive: with %s=false the fake metadata service saw no request, so the first half could not have seen one either", envIMDSDisabled)
	}
}
