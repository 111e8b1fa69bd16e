package ingest

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"lakehouse/internal/recentchange"
)

// The contract is the upstream mediawiki/recentchange schema (copied verbatim
// from wikimedia/schemas-event-primary) plus the project's stricter rules,
// both embedded in the binary so validation never touches the network.
//
//go:embed schema/mediawiki-recentchange-1.0.1.json schema/lakehouse-recentchange-contract.json
var schemaFS embed.FS

const (
	upstreamSchemaURL = "https://schema.wikimedia.org/repositories/primary/jsonschema/mediawiki/recentchange/1.0.1.json"
	contractSchemaURL = "https://lakehouse.invalid/schema/ingest/recentchange-contract/1.0.0"
)

// Reasons an event is routed to the dead-letter topic. The DLQ's dlq.reason
// header carries the wrapped error's text; match the class with errors.Is.
var (
	// ErrNotJSON: the SSE data is not one well-formed JSON value.
	ErrNotJSON = errors.New("not json")
	// ErrContract: the data is JSON but breaks the schema or the project's rules.
	ErrContract = errors.New("contract violation")
	// ErrOversized: the data is longer than Config.MaxEventBytes.
	ErrOversized = errors.New("oversized event")
)

// Event is what the contract extracts from a valid event for routing.
type Event struct {
	ID        string // meta.id, a UUID: the dedup key and the broker key
	Domain    string // meta.domain ("canary" marks a probe event)
	Type      string // edit, new, log, categorize or external
	Timestamp int64  // the edit time, Unix seconds
}

// Canary reports whether the event is one of Wikimedia's probe events.
func (e Event) Canary() bool { return e.Domain == "canary" }

// Contract validates raw event bytes: the embedded schemas, then the rules
// JSON Schema cannot state (contract_rules.go: the fields silver reads are
// unambiguous, its integers fit its columns, the text is UTF-8, the event's
// times are bounded by its intake time). It is safe for concurrent use.
type Contract struct {
	schema *jsonschema.Schema
	// accept passes the events that certainly satisfy schema without the
	// library (contract_accept.go); nil: the library checks every event.
	accept *acceptor
	// plan is the acceptor compiled for the single pass over an event's
	// bytes (contract_pass.go), which passes what it can before anything
	// is decoded; nil: every event is decoded.
	plan     *contractPlan
	maxAhead time.Duration // of the time rules (recentchange.CheckTimes)
}

// NewContract compiles the embedded schemas. Its time rules allow
// recentchange.DefaultMaxAhead (see WithMaxAhead).
func NewContract() (*Contract, error) {
	return compileContract(true)
}

// WithMaxAhead returns a copy of c whose time rules allow an event's
// timestamp to be up to d ahead of its meta.dt, and meta.dt up to d ahead of
// the broker's clock (recentchange.CheckTimes). d <= 0 leaves c's margin.
func (c *Contract) WithMaxAhead(d time.Duration) *Contract {
	out := *c
	if d > 0 {
		out.maxAhead = d
	}
	return &out
}

// MaxAhead is the margin of c's time rules.
func (c *Contract) MaxAhead() time.Duration { return c.maxAhead }

// compileContract compiles the embedded schemas; with fast, integer types
// and their bounds are checked by the number keyword (contract_number.go)
// instead of the library's big.Rat path, and the acceptor
// (contract_accept.go) passes the events it can without the library. The
// verdicts and reasons are the same (tests compile both ways and compare).
func compileContract(fast bool) (*Contract, error) {
	sch, err := compileSchema(fast)
	if err != nil {
		return nil, err
	}
	out := &Contract{schema: sch, maxAhead: recentchange.DefaultMaxAhead}
	if fast {
		if out.accept, err = compileAcceptor(sch); err != nil {
			return nil, fmt.Errorf("compile contract: %w", err)
		}
		out.plan = compilePlan(out.accept)
	}
	return out, nil
}

// compileSchema compiles the embedded schemas, with the number keyword when
// fast is set.
func compileSchema(fast bool) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if fast {
		vocab, err := numberVocab()
		if err != nil {
			return nil, err
		}
		c.RegisterVocabulary(vocab)
	}
	for url, name := range map[string]string{
		upstreamSchemaURL: "schema/mediawiki-recentchange-1.0.1.json",
		contractSchemaURL: "schema/lakehouse-recentchange-contract.json",
	} {
		b, err := schemaFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read schema %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("parse schema %s: %w", name, err)
		}
		if fast {
			fastNumbers(doc) // the parsed copy; the embedded file stays verbatim
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("add schema %s: %w", name, err)
		}
	}
	sch, err := c.Compile(contractSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile contract: %w", err)
	}
	return sch, nil
}

// Check validates raw against the contract, except the rules that compare
// the event's times with the broker's clock (CheckAt), and returns the
// routing fields. The error wraps ErrNotJSON or ErrContract and its text is
// a one-line, human-readable reason.
func (c *Contract) Check(raw []byte) (Event, error) {
	return c.CheckAt(raw, time.Time{})
}

// CheckAt is Check for an event the broker received at received: its
// meta.dt and timestamp may be at most c.MaxAhead() ahead of received. A
// zero received skips those two rules.
func (c *Contract) CheckAt(raw []byte, received time.Time) (Event, error) {
	if c.plan != nil {
		if ev, ok := c.pass(raw, received); ok {
			return ev, nil
		}
	}
	s := scratchPool.Get().(*docScratch)
	defer func() {
		s.release()
		scratchPool.Put(s)
	}()
	// Nothing below keeps doc: the error text and the Event's strings are
	// copies, made before s is released.
	doc, fl, err := decodeInto(raw, s)
	if err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	reasons := textRules(doc, &fl)
	if len(reasons) > 0 || c.accept == nil || !c.accept.valid(doc) {
		err = c.schema.Validate(doc)
	}
	if err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			reasons = append(reasons, flatten(ve))
		} else {
			reasons = append(reasons, err.Error())
		}
		return Event{}, fmt.Errorf("%w: %s", ErrContract, strings.Join(reasons, "; "))
	}
	// The schema guarantees the shapes below.
	obj := doc.(map[string]any)
	ts, more := c.valueRules(obj, received)
	if reasons = append(reasons, more...); len(reasons) > 0 {
		return Event{}, fmt.Errorf("%w: %s", ErrContract, strings.Join(reasons, "; "))
	}
	meta := obj["meta"].(map[string]any)
	// Clone: decoded strings share memory with raw.
	return Event{
		ID:        strings.Clone(meta["id"].(string)),
		Domain:    strings.Clone(meta["domain"].(string)),
		Type:      strings.Clone(obj["type"].(string)),
		Timestamp: ts,
	}, nil
}

// scratchPool holds the decoders' reusable maps, one docScratch per
// concurrent Check.
var scratchPool = sync.Pool{New: func() any { return newDocScratch() }}

var (
	defaultContract     *Contract
	defaultContractErr  error
	defaultContractOnce sync.Once
)

// Validate checks raw against the embedded contract as an event received
// now. It returns nil for a valid event, or an error wrapping ErrNotJSON or
// ErrContract.
func Validate(raw []byte) error {
	c, err := loadDefaultContract()
	if err != nil {
		return err
	}
	_, err = c.CheckAt(raw, time.Now())
	return err
}

func loadDefaultContract() (*Contract, error) {
	defaultContractOnce.Do(func() {
		defaultContract, defaultContractErr = NewContract()
	})
	return defaultContract, defaultContractErr
}

// flatten renders the leaf causes of a validation error on one line:
// at '/meta/id': 'x' is not valid uuid; at '/type': value must be one of ...
func flatten(ve *jsonschema.ValidationError) string {
	var parts []string
	eachLeaf(ve, func(_ *jsonschema.ValidationError, msg string) { parts = append(parts, msg) })
	if len(parts) == 0 {
		return ve.Error()
	}
	return strings.Join(parts, "; ")
}

// eachLeaf calls fn with every leaf cause of ve and its one-line message.
func eachLeaf(ve *jsonschema.ValidationError, fn func(e *jsonschema.ValidationError, msg string)) {
	if len(ve.Causes) == 0 {
		msg := ve.Error()
		// Error() of a leaf is "jsonschema validation failed with '<url>#'\n- at '/x': msg"
		// when it is the root; otherwise "at '/x': msg". Keep the last line.
		if i := strings.LastIndex(msg, "\n- "); i >= 0 {
			msg = msg[i+3:]
		}
		fn(ve, msg)
		return
	}
	for _, c := range ve.Causes {
		eachLeaf(c, fn)
	}
}
