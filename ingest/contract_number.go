package ingest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The validator decides "is this number an integer" with
// new(big.Rat).SetString(fmt.Sprint(v)) for every value checked against
// "type": "integer", and minimum/maximum the same way: in the ingest
// profile that was about a sixth of all CPU (plus the garbage). The
// contract therefore compiles a transformed copy of the schema documents
// (the embedded files stay verbatim): a subschema made only of "type" with
// "integer" in it, optional "minimum"/"maximum" and annotations becomes
//
//	{"x-lakehouse-number": {"type": <the same type>, "minimum": m, "maximum": M}, <annotations>}
//
// and the keyword below gives the same verdict with a byte scan for plain
// integer literals. Anything else (1.0, 1e3, Go floats) takes the library's
// exact big.Rat rule, and errors are the library's own kinds (kind.Type,
// kind.Minimum, kind.Maximum), so the DLQ reason reads exactly as before.
// TestFastNumbersSameVerdict compares both compiles on every input class.

// numberKeyword is the keyword the transform writes.
const numberKeyword = "x-lakehouse-number"

const numberVocabURL = "https://lakehouse.invalid/schema/vocab/number"

// numberKeys are the keys a subschema may hold to be transformed: "type",
// the bounds, and annotations that do not take part in validation. A
// subschema with any other key is left to the library, so the order in
// which keywords are checked (type first, then the rest) cannot matter.
var numberKeys = map[string]bool{
	"type": true, "minimum": true, "maximum": true,
	"description": true, "title": true, "$comment": true, "examples": true, "default": true,
}

// fastNumbers rewrites, in place, every draft-07 subschema of doc that
// numberKeys allows and whose type names "integer". It walks only the
// keywords that hold subschemas, never instance data (enum, const,
// examples, default).
func fastNumbers(doc any) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return // a boolean schema, or not a schema
	}
	if numberSchema(obj) {
		spec := map[string]any{"type": obj["type"]}
		for _, k := range []string{"minimum", "maximum"} {
			if v, ok := obj[k]; ok {
				spec[k] = v
				delete(obj, k)
			}
		}
		delete(obj, "type")
		obj[numberKeyword] = spec
		return // only annotations are left
	}
	for _, k := range []string{"additionalItems", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "not"} {
		fastNumbers(obj[k])
	}
	switch items := obj["items"].(type) {
	case map[string]any:
		fastNumbers(items)
	case []any:
		for _, s := range items {
			fastNumbers(s)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if arr, ok := obj[k].([]any); ok {
			for _, s := range arr {
				fastNumbers(s)
			}
		}
	}
	for _, k := range []string{"properties", "patternProperties", "definitions", "dependencies"} {
		if m, ok := obj[k].(map[string]any); ok {
			for _, s := range m {
				fastNumbers(s) // dependencies' string arrays are skipped: not maps
			}
		}
	}
}

// numberSchema reports whether obj is a subschema fastNumbers rewrites.
func numberSchema(obj map[string]any) bool {
	for k := range obj {
		if !numberKeys[k] {
			return false
		}
	}
	names, ok := typeNames(obj["type"])
	if !ok {
		return false
	}
	for _, n := range names {
		if n == "integer" {
			return true
		}
	}
	return false
}

// typeNames reads a "type" value: a string or an array of strings.
func typeNames(v any) ([]string, bool) {
	switch v := v.(type) {
	case string:
		return []string{v}, true
	case []any:
		names := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			names = append(names, s)
		}
		return names, len(names) > 0
	}
	return nil, false
}

// numberVocab is the vocabulary that compiles numberKeyword.
func numberVocab() (*jsonschema.Vocabulary, error) {
	// The keyword's own shape, checked when the contract compiles (a bad
	// transform fails loudly instead of validating nothing).
	meta, err := jsonschema.UnmarshalJSON(strings.NewReader(`{
		"properties": {
			"` + numberKeyword + `": {
				"type": "object",
				"required": ["type"],
				"additionalProperties": false,
				"properties": {
					"type": {
						"anyOf": [
							{"enum": ["null", "boolean", "number", "integer", "string", "array", "object"]},
							{"type": "array", "minItems": 1, "items": {"enum": ["null", "boolean", "number", "integer", "string", "array", "object"]}}
						]
					},
					"minimum": {"type": "number"},
					"maximum": {"type": "number"}
				}
			}
		}
	}`))
	if err != nil {
		return nil, fmt.Errorf("parse number vocabulary: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(numberVocabURL, meta); err != nil {
		return nil, fmt.Errorf("add number vocabulary: %w", err)
	}
	sch, err := c.Compile(numberVocabURL)
	if err != nil {
		return nil, fmt.Errorf("compile number vocabulary: %w", err)
	}
	return &jsonschema.Vocabulary{URL: numberVocabURL, Schema: sch, Compile: compileNumber}, nil
}

func compileNumber(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	v, ok := obj[numberKeyword]
	if !ok {
		return nil, nil
	}
	spec, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("compile %s: not an object", numberKeyword)
	}
	names, ok := typeNames(spec["type"])
	if !ok {
		return nil, fmt.Errorf("compile %s: bad type %v", numberKeyword, spec["type"])
	}
	var n numberCheck
	var tt jsonschema.Types
	for _, name := range names {
		tt.Add(name)
		n.types |= typeBit(name)
	}
	n.want = tt.ToStrings() // the library's order: "got string, want null or integer"
	for k, b := range map[string]*bound{"minimum": &n.min, "maximum": &n.max} {
		if v, ok := spec[k]; ok {
			// As the library compiles a bound (objCompiler.numVal).
			r, ok := new(big.Rat).SetString(fmt.Sprint(v))
			if !ok {
				return nil, fmt.Errorf("compile %s: bad %s %v", numberKeyword, k, v)
			}
			b.set(r)
		}
	}
	return &n, nil
}

// Type bits of numberCheck.types, named as in JSON Schema.
const (
	tNull = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

func typeBit(name string) int {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBoolean
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "string":
		return tString
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return 0
}

// bound is a minimum or maximum, with an int64 copy when it is a whole
// number that fits.
type bound struct {
	rat   *big.Rat
	i     int64
	exact bool // rat == i
}

func (b *bound) set(r *big.Rat) {
	b.rat = r
	if r.IsInt() && r.Num().IsInt64() {
		b.i, b.exact = r.Num().Int64(), true
	}
}

// numberCheck is the compiled numberKeyword: "type" (with "integer" in it)
// plus optional minimum and maximum, checked in the library's order.
type numberCheck struct {
	types    int
	want     []string
	min, max bound
}

func (n *numberCheck) Validate(ctx *jsonschema.ValidatorContext, v any) {
	wrong := n.check(v)
	if wrong&numberType != 0 {
		ctx.AddError(&kind.Type{Got: jsonTypeName(v), Want: n.want})
		return
	}
	if wrong&numberBelow != 0 {
		ctx.AddError(&kind.Minimum{Got: ratOf(v), Want: n.min.rat})
	}
	if wrong&numberAbove != 0 {
		ctx.AddError(&kind.Maximum{Got: ratOf(v), Want: n.max.rat})
	}
}

// What numberCheck.check finds wrong with a value (0: nothing).
const (
	numberType  = 1 << iota // not of the keyword's types
	numberBelow             // below minimum
	numberAbove             // above maximum
)

// check applies the keyword to v, as Validate reports it and the acceptor
// (contract_accept.go) decides with it.
func (n *numberCheck) check(v any) int {
	got := jsonTypeName(v)
	if got != "number" {
		if n.types&typeBit(got) == 0 {
			return numberType
		}
		return 0
	}
	// The library: matched = number in types || (integer in types && isInteger(v)).
	lit, plain := integerLiteral(v)
	if n.types&tNumber == 0 && (n.types&tInteger == 0 || !plain && !isIntegerExact(v)) {
		return numberType
	}
	// minimum, then maximum, as the library's numValidate.
	out := 0
	if n.min.rat != nil && n.below(v, lit, plain, &n.min) {
		out |= numberBelow
	}
	if n.max.rat != nil && n.above(v, lit, plain, &n.max) {
		out |= numberAbove
	}
	return out
}

// below reports v < b.
func (n *numberCheck) below(v any, lit string, plain bool, b *bound) bool {
	if i, ok := smallInt(lit, plain); ok && b.exact {
		return i < b.i
	}
	r := ratOf(v)
	return r != nil && r.Cmp(b.rat) < 0
}

// above reports v > b.
func (n *numberCheck) above(v any, lit string, plain bool, b *bound) bool {
	if i, ok := smallInt(lit, plain); ok && b.exact {
		return i > b.i
	}
	r := ratOf(v)
	return r != nil && r.Cmp(b.rat) > 0
}

// smallInt parses a plain integer literal of at most 18 digits: it always
// fits an int64, so the comparison is exact.
func smallInt(lit string, plain bool) (int64, bool) {
	if !plain || len(lit) > 19 || (len(lit) == 19 && lit[0] != '-') {
		return 0, false
	}
	i, err := strconv.ParseInt(lit, 10, 64)
	return i, err == nil
}

// integerLiteral returns v's text and whether it is a plain integer
// literal: an optional '-' and one or more ASCII digits, nothing else (no
// '.', 'e', 'E'). Such a literal is always an integer by the library's rule.
func integerLiteral(v any) (string, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case int:
		return strconv.FormatInt(int64(v), 10), true
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(v), true
	default:
		return "", false // floats: the exact rule decides
	}
	d := s
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if d == "" {
		return s, false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return s, false
		}
	}
	return s, true
}

// isIntegerExact is the library's rule (isInteger in its util.go).
func isIntegerExact(v any) bool {
	r, ok := new(big.Rat).SetString(fmt.Sprint(v))
	return ok && r.IsInt()
}

// ratOf is the number as the library's numValidate sees it (nil if it
// cannot be parsed, which the decoder never produces).
func ratOf(v any) *big.Rat {
	r, _ := new(big.Rat).SetString(fmt.Sprintf("%v", v))
	return r
}

// jsonTypeName is the library's typeOf for the values the decoder makes.
// The library rejects any other value (and NaN/Inf) before extensions run.
func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}
