package main

import (
	"errors"
	"fmt"
	"net"
)

// The HTTP surface.
const (
	defaultHTTPAddr = "127.0.0.1:8080"
	envHTTPToken    = "LAKEHOUSE_HTTP_TOKEN"
)

// errHTTPAddr: --http names an address the appliance must not serve on as
// configured (non-loopback without --http-remote and a token).
var errHTTPAddr = errors.New("refusing to serve HTTP")

// checkHTTP validates the --http settings: "off" (or empty) disables the
// surface; a non-loopback address needs --http-remote and a token.
func (f *pipelineFlags) checkHTTP() error {
	if f.HTTPAddr == "off" {
		f.HTTPAddr = ""
	}
	if f.HTTPAddr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(f.HTTPAddr)
	if err != nil {
		return fmt.Errorf("--http %q: want host:port or off: %w", f.HTTPAddr, errUsage)
	}
	if isLoopback(host) {
		return nil
	}
	if !f.HTTPRemote || f.HTTPToken == "" {
		return fmt.Errorf("--http %s is not a loopback address: %w without --http-remote and a bearer token (--http-token or %s): %w",
			f.HTTPAddr, errHTTPAddr, envHTTPToken, errUsage)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
