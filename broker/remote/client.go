package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"lakehouse/broker"
)

// ErrReadOnly: a dialed log only reads; Append and CreateTopic fail with it.
var ErrReadOnly = errors.New("remote broker: read-only")

// Log is a broker.Log read over HTTP from a Handler (see Dial).
type Log struct {
	base   string // URL the handler is mounted at, without a trailing slash
	token  string // bearer token ("" : none)
	client *http.Client
	// PollEvery is how often Wait asks for the offsets.
	PollEvery time.Duration
}

var _ broker.Log = (*Log)(nil)

// Dial returns the log served at base (the URL its Handler is mounted at),
// sending token as a bearer token when not empty. It checks the server
// answers (ctx bounds that first request).
func Dial(ctx context.Context, base, token string) (*Log, error) {
	l := &Log{base: strings.TrimSuffix(base, "/"), token: token, client: &http.Client{}, PollEvery: 250 * time.Millisecond}
	if _, err := l.Topics(ctx); err != nil {
		return nil, fmt.Errorf("dial broker at %s: %w", base, err)
	}
	return l, nil
}

// Close releases idle connections.
func (l *Log) Close() error {
	l.client.CloseIdleConnections()
	return nil
}

func (l *Log) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	u := l.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if l.token != "" {
		req.Header.Set("Authorization", "Bearer "+l.token)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote broker: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("remote broker: read %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		if json.Unmarshal(body, &e) == nil && e.Code != "" {
			return nil, wireError(e.Code, e.Message)
		}
		return nil, fmt.Errorf("remote broker: %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

func (l *Log) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	body, err := l.get(ctx, path, q)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("remote broker: decode %s: %w", path, err)
	}
	return nil
}

// Topics implements broker.Log.
func (l *Log) Topics(ctx context.Context) ([]broker.TopicInfo, error) {
	var out []broker.TopicInfo
	return out, l.getJSON(ctx, pathTopics, nil, &out)
}

// Offsets implements broker.Log.
func (l *Log) Offsets(ctx context.Context, topic string) ([]broker.PartitionOffsets, error) {
	var out []broker.PartitionOffsets
	return out, l.getJSON(ctx, pathOffsets, url.Values{"topic": {topic}}, &out)
}

// Meta implements broker.Log.
func (l *Log) Meta(ctx context.Context, key string) ([]byte, error) {
	var v struct {
		Value []byte `json:"value"`
		Set   bool   `json:"set"`
	}
	if err := l.getJSON(ctx, pathMeta, url.Values{"key": {key}}, &v); err != nil {
		return nil, err
	}
	if !v.Set {
		return nil, nil
	}
	if v.Value == nil {
		v.Value = []byte{}
	}
	return v.Value, nil
}

// Read implements broker.Log. The server returns at most maxRead
// messages a request; Read asks again until it has max (max <= 0: no
// limit) or the partition's end, as a local Read does.
func (l *Log) Read(ctx context.Context, topic string, partition int, from int64, max int) ([]broker.Message, error) {
	var out []broker.Message
	for max <= 0 || len(out) < max { // max <= 0: no limit, as for *broker.DB
		ask := maxRead
		if max > 0 {
			ask = min(max-len(out), maxRead)
		}
		q := url.Values{"topic": {topic}, "partition": {strconv.Itoa(partition)},
			"from": {strconv.FormatInt(from, 10)}, "max": {strconv.Itoa(ask)}}
		body, err := l.get(ctx, pathRead, q)
		if err != nil {
			if len(out) > 0 {
				return out, nil // what was read holds; the next Read from past it reports the error
			}
			return nil, err
		}
		msgs, err := decodeMessages(body, topic, partition)
		if err != nil {
			return nil, fmt.Errorf("remote broker: read %s/%d@%d: %w", topic, partition, from, err)
		}
		out = append(out, msgs...)
		if len(msgs) < ask {
			break // the partition's end
		}
		from = msgs[len(msgs)-1].Offset + 1
	}
	if out == nil {
		out = []broker.Message{}
	}
	return out, nil
}

// Wait implements broker.Log by polling the offsets every PollEvery.
func (l *Log) Wait(ctx context.Context, topic string, partition int, offset int64) error {
	for {
		offs, err := l.Offsets(ctx, topic)
		if err != nil {
			return err
		}
		if partition < 0 || partition >= len(offs) {
			return fmt.Errorf("wait %s/%d: %w", topic, partition, broker.ErrBadPartition)
		}
		if offs[partition].End > offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.PollEvery):
		}
	}
}

// Append implements broker.Log: always ErrReadOnly.
func (l *Log) Append(context.Context, broker.Batch) ([]broker.Position, error) {
	return nil, ErrReadOnly
}

// CreateTopic implements broker.Log: always ErrReadOnly.
func (l *Log) CreateTopic(context.Context, string, int) error { return ErrReadOnly }
