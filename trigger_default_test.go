package main

import (
	"io"
	"testing"
	"time"

	"lakehouse/internal/appliance"
	"lakehouse/stream"
)

// TestTriggerDefaultOnS3: run's flag handling gives --trigger the S3
// default when the warehouse (the flag or LAKEHOUSE_WAREHOUSE) is on S3,
// and only then; a --trigger given explicitly wins, on S3 too.
func TestTriggerDefaultOnS3(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want time.Duration
	}{
		{"", nil, stream.DefaultTrigger},
		{"", []string{"--warehouse", "s3://lake/wh"}, appliance.DefaultS3Trigger},
		{"", []string{"--warehouse", "s3a://lake/wh"}, appliance.DefaultS3Trigger},
		{"s3://lake/wh", nil, appliance.DefaultS3Trigger},
		{"", []string{"--warehouse", "file:///tmp/wh"}, stream.DefaultTrigger},
		{"", []string{"--warehouse", "/tmp/wh"}, stream.DefaultTrigger},
		{"", []string{"--warehouse", "s3://lake/wh", "--trigger", "2s"}, 2 * time.Second},
		{"", []string{"--trigger", "1s", "--warehouse", "s3://lake/wh"}, time.Second},
		{"s3://lake/wh", []string{"--trigger=5s"}, 5 * time.Second},
	} {
		t.Setenv("LAKEHOUSE_WAREHOUSE", c.env)
		f, err := parseRunFlags(append([]string{"--data", t.TempDir()}, c.args...), io.Discard)
		if err != nil {
			t.Fatalf("env %q, %v: %v", c.env, c.args, err)
		}
		if f.Trigger != c.want {
			t.Errorf("env %q, %v: --trigger %s, want %s", c.env, c.args, f.Trigger, c.want)
		}
	}
	if appliance.DefaultS3Trigger == stream.DefaultTrigger {
		t.Fatal("inconclusive: the S3 default is the default")
	}
}
