package telemetry

import (
	"fmt"
	"io"
	"log/slog"
)

// NewLogger builds the appliance's logger on w: format text, json, or auto
// (JSON when journal says w is the systemd journal, text otherwise), at
// the least level named (debug, info, warn or error); an error names the
// setting as the flag does (log-format, log-level). Warnings and errors
// are also kept in a LogRing for the dashboard.
func NewLogger(w io.Writer, format, level string, journal bool) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch {
	case format == "text", format == "auto" && !journal:
		h = slog.NewTextHandler(w, opts)
	case format == "json", format == "auto" && journal:
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("log-format %q: want auto, text or json", format)
	}
	return slog.New(&RingHandler{Next: h, Ring: NewLogRing(50)}), nil
}
