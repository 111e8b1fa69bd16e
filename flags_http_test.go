package main

import (
	"errors"
	"lakehouse/internal/appliance"
	"testing"
)

// TestHTTPAddressRules: loopback addresses are served as they are; any
// other address is refused unless --http-remote and a token are both given;
// "off" turns the surface off.
func TestHTTPAddressRules(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		remote, ok  bool
	}{
		{"127.0.0.1:8080", "", false, true},
		{"localhost:0", "", false, true},
		{"[::1]:9000", "", false, true},
		{"off", "", false, true},
		{"0.0.0.0:8080", "", false, false},
		{":8080", "", false, false},
		{"0.0.0.0:8080", "s3cret", false, false},
		{"0.0.0.0:8080", "", true, false},
		{"0.0.0.0:8080", "s3cret", true, true},
		{"not-an-address", "", false, false},
	} {
		f := pipelineFlags{Config: appliance.Config{HTTPAddr: tc.addr, HTTPToken: tc.token, HTTPRemote: tc.remote}}
		err := f.checkHTTP()
		if (err == nil) != tc.ok {
			t.Errorf("--http %s (token %q, remote %v): got %v, want ok=%v", tc.addr, tc.token, tc.remote, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errUsage) {
			t.Errorf("--http %s: %v is not a usage error", tc.addr, err)
		}
	}
}
