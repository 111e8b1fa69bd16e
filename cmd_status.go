package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"

	"lakehouse/internal/appliance"
	"lakehouse/internal/dashboard"
	"lakehouse/internal/localapi"
	"lakehouse/internal/observe"
)

func init() {
	register(&command{name: "status", summary: "what a running appliance is doing: readiness, counts per hop, lags, freshness, tables, checks", run: runStatus})
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	addr := fs.String("http", defaultHTTPAddr, "address of the running appliance's HTTP surface (default: the appliance running on --data, else "+defaultHTTPAddr+")")
	token := fs.String("http-token", os.Getenv(envHTTPToken), "bearer token, if the appliance requires one (env "+envHTTPToken+")")
	asJSON := fs.Bool("json", false, "print the raw /api/status JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	orDemo(&c, fs, stderr)
	httpSet := false
	fs.Visit(func(f *flag.Flag) { httpSet = httpSet || f.Name == "http" })
	if !httpSet {
		// The appliance running on the data directory answers on its
		// local endpoint whatever its --http.
		if live, err := localapi.Dial(ctx, c.Data); err == nil && live != nil {
			*addr, *token = live.Info().URL, live.Info().Token
		}
	}
	body, err := observe.FetchObservation(ctx, *addr, *token)
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("no appliance answering at %s (is `%s run` running? --http names its address): %w", *addr, self(), err)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(body)
		return err
	}
	var o observe.Observation
	if err := json.Unmarshal(body, &o); err != nil {
		return fmt.Errorf("decode status: %w", err)
	}
	dashboard.WriteText(stdout, o)
	return nil
}
