package ingest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The library validates an event by walking the schema with a context per
// keyword and allocating as it goes: at the real stream's rate that was
// about 80 µs of CPU per event, 7 % of the appliance's (a CPU profile of
// the soak), for events that nearly all pass. The acceptor is the same
// compiled schema turned into plain checks that allocate nothing. It
// decides one thing: that a decoded event certainly satisfies the schema.
// Every other event, a violation or one whose verdict it does not settle,
// is validated by the library as before, so the DLQ reason is always the
// library's text, and the verdict is the library's unless the acceptor
// passes an event the library would refuse: TestAcceptorSameVerdict and
// FuzzAcceptorSameVerdict compare the two on every input class.
//
// It keeps to what the contract uses: boolean schemas, type, enum of
// strings, format (the library's own checker), $ref (draft 7: the other
// keywords beside it are ignored, as the library does), required,
// properties, additionalProperties, minLength, maxLength, integer minimum
// and maximum, allOf and if/then/else, and the contract's number keyword
// (contract_number.go: the same exact rule the library path runs). A
// subschema with any other keyword is "unsure" whenever it is reached, and
// so are the numbers a plain "type"/minimum/maximum cannot settle by a plain
// literal (1.0, 1e3, literals beyond int64).

// verdict is what the acceptor concluded about a value. Its order is how
// verdicts of sibling keywords combine: the worst one wins, and a certain
// violation outranks not knowing.
type verdict uint8

const (
	vValid   verdict = iota
	vUnsure          // the library decides
	vInvalid         // certainly refused by the schema
)

// acceptor is one compiled subschema.
type acceptor struct {
	unsure   bool                // uses a keyword the acceptor does not check
	boolean  *bool               // a boolean schema
	types    int                 // type bits (typeBit); 0: no type keyword
	enum     map[string]struct{} // enum of strings; nil: no enum
	format   *jsonschema.Format
	ref      *acceptor
	required []string
	props    map[string]*acceptor
	propList []namedAcceptor // props, for objects checked member by name
	// additional applies to members not in props; nil: any.
	additional   *acceptor
	noAdditional bool           // additionalProperties: false
	minLen       int            // -1: none
	maxLen       int            // -1: none
	min, max     bound          // rat nil: none
	numbers      []*numberCheck // the number keyword (contract_number.go), exact as it is
	allOf        []*acceptor
	ifA          *acceptor
	thenA, elseA *acceptor
}

type namedAcceptor struct {
	name string
	a    *acceptor
}

// maxAcceptDepth bounds the nesting the acceptor follows (a $ref cycle on
// one value, or a very deep document, is left to the library).
const maxAcceptDepth = 64

// compileAcceptor turns a schema compiled by the library (draft-7 keywords
// and the contract's number keyword) into an acceptor.
func compileAcceptor(s *jsonschema.Schema) (*acceptor, error) {
	c := acceptCompiler{seen: map[*jsonschema.Schema]*acceptor{}}
	return c.compile(s)
}

type acceptCompiler struct {
	seen map[*jsonschema.Schema]*acceptor
}

func (c *acceptCompiler) compile(s *jsonschema.Schema) (*acceptor, error) {
	if a, ok := c.seen[s]; ok {
		return a, nil
	}
	a := &acceptor{minLen: -1, maxLen: -1}
	c.seen[s] = a // before the subschemas: a $ref may lead back here
	if s.Bool != nil {
		a.boolean = s.Bool
		return a, nil
	}
	if s.DraftVersion >= 2019 || unsupportedKeywords(s) {
		a.unsure = true
		return a, nil
	}
	if s.Types != nil {
		for _, name := range s.Types.ToStrings() {
			bit := typeBit(name)
			if bit == 0 {
				return nil, fmt.Errorf("acceptor: %s: unknown type %q", s.Location, name)
			}
			a.types |= bit
		}
	}
	if s.Enum != nil {
		a.enum = make(map[string]struct{}, len(s.Enum.Values))
		for _, v := range s.Enum.Values {
			str, ok := v.(string)
			if !ok {
				a.unsure = true // an enum of other values: the library's equality
				return a, nil
			}
			a.enum[str] = struct{}{}
		}
	}
	if s.Format != nil {
		if s.Format.Name == "regex" {
			a.unsure = true // the library may check it with another engine
			return a, nil
		}
		a.format = s.Format
	}
	var err error
	sub := func(s *jsonschema.Schema) *acceptor {
		if s == nil || err != nil {
			return nil
		}
		var out *acceptor
		out, err = c.compile(s)
		return out
	}
	a.ref = sub(s.Ref)
	a.required = s.Required
	if len(s.Properties) > 0 {
		a.props = make(map[string]*acceptor, len(s.Properties))
		for name, ps := range s.Properties {
			a.props[name] = sub(ps)
			a.propList = append(a.propList, namedAcceptor{name, a.props[name]})
		}
	}
	switch ap := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		a.noAdditional = !ap
	case *jsonschema.Schema:
		a.additional = sub(ap)
	default:
		a.unsure = true
	}
	if s.MinLength != nil {
		a.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		a.maxLen = *s.MaxLength
	}
	for _, b := range []struct {
		dst *bound
		r   *big.Rat
	}{{&a.min, s.Minimum}, {&a.max, s.Maximum}} {
		if b.r != nil {
			b.dst.set(b.r)
		}
	}
	for _, as := range s.AllOf {
		a.allOf = append(a.allOf, sub(as))
	}
	a.ifA, a.thenA, a.elseA = sub(s.If), sub(s.Then), sub(s.Else)
	for _, e := range s.Extensions {
		a.numbers = append(a.numbers, e.(*numberCheck)) // onlyNumberKeywords
	}
	return a, err
}

// unsupportedKeywords reports whether s uses a keyword the acceptor does
// not check (annotations do not count).
func unsupportedKeywords(s *jsonschema.Schema) bool {
	return s.RecursiveRef != nil || s.DynamicRef != nil || s.Const != nil || s.Not != nil ||
		len(s.AnyOf) > 0 || len(s.OneOf) > 0 ||
		s.MaxProperties != nil || s.MinProperties != nil || s.PropertyNames != nil ||
		len(s.PatternProperties) > 0 || len(s.Dependencies) > 0 || len(s.DependentRequired) > 0 ||
		len(s.DependentSchemas) > 0 || s.UnevaluatedProperties != nil ||
		s.MinItems != nil || s.MaxItems != nil || s.UniqueItems || s.Contains != nil ||
		s.MinContains != nil || s.MaxContains != nil || s.Items != nil || s.AdditionalItems != nil ||
		len(s.PrefixItems) > 0 || s.Items2020 != nil || s.UnevaluatedItems != nil ||
		s.Pattern != nil || s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil ||
		s.ExclusiveMaximum != nil || s.ExclusiveMinimum != nil || s.MultipleOf != nil ||
		!onlyNumberKeywords(s.Extensions)
}

// onlyNumberKeywords reports whether every extension keyword is the
// contract's number keyword, which the acceptor applies itself.
func onlyNumberKeywords(exts []jsonschema.SchemaExt) bool {
	for _, e := range exts {
		if _, ok := e.(*numberCheck); !ok {
			return false
		}
	}
	return true
}

// valid reports whether v, as decodeInto produces it (map[string]any,
// []any, string, json.Number, bool, nil), certainly satisfies the schema.
func (a *acceptor) valid(v any) bool { return a.check(v, 0) == vValid }

func (a *acceptor) check(v any, depth int) verdict {
	if a.boolean != nil {
		if *a.boolean {
			return vValid
		}
		return vInvalid
	}
	if a.unsure || depth > maxAcceptDepth {
		return vUnsure
	}
	out := vValid
	if a.types != 0 {
		if out = max(out, a.checkType(v)); out == vInvalid {
			return out
		}
	}
	if a.enum != nil {
		s, ok := v.(string)
		if !ok {
			return vInvalid // no value but a string equals a string
		}
		if _, ok := a.enum[s]; !ok {
			return vInvalid
		}
	}
	if a.format != nil && a.format.Validate(v) != nil {
		return vInvalid
	}
	if a.ref != nil {
		// Draft 7: $ref replaces the keywords beside it, as in the library.
		return max(out, a.ref.check(v, depth+1))
	}
	switch v := v.(type) {
	case map[string]any:
		out = max(out, a.checkObject(v, depth))
	case string:
		out = max(out, a.checkString(v))
	case json.Number:
		out = max(out, a.checkNumber(v))
	case bool, nil, []any:
	default:
		return vUnsure // not a value the decoder makes
	}
	if out == vInvalid {
		return out
	}
	for _, s := range a.allOf {
		if out = max(out, s.check(v, depth+1)); out == vInvalid {
			return out
		}
	}
	for _, n := range a.numbers {
		if n.check(v) != 0 {
			return vInvalid
		}
	}
	if a.ifA != nil {
		switch a.ifA.check(v, depth+1) {
		case vValid:
			if a.thenA != nil {
				out = max(out, a.thenA.check(v, depth+1))
			}
		case vInvalid:
			if a.elseA != nil {
				out = max(out, a.elseA.check(v, depth+1))
			}
		default:
			return vUnsure // which branch applies is not settled
		}
	}
	return out
}

func (a *acceptor) checkType(v any) verdict {
	var t int
	switch v := v.(type) {
	case nil:
		t = tNull
	case bool:
		t = tBoolean
	case string:
		t = tString
	case []any:
		t = tArray
	case map[string]any:
		t = tObject
	case json.Number:
		if a.types&tNumber != 0 {
			return vValid
		}
		if a.types&tInteger == 0 {
			return vInvalid
		}
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return vUnsure // 1.0 and 1e3 are integers too, and long literals
		}
		return vValid
	default:
		return vUnsure
	}
	if a.types&t == 0 {
		return vInvalid
	}
	return vValid
}

func (a *acceptor) checkObject(obj map[string]any, depth int) verdict {
	for _, name := range a.required {
		if _, ok := obj[name]; !ok {
			return vInvalid
		}
	}
	out := vValid
	if a.additional == nil && !a.noAdditional {
		// Only the named members have rules: look them up (a Go map
		// lookup is cheaper than its iteration).
		for _, p := range a.propList {
			if val, ok := obj[p.name]; ok {
				if out = max(out, p.a.check(val, depth+1)); out == vInvalid {
					return out
				}
			}
		}
		return out
	}
	for name, val := range obj {
		ps, ok := a.props[name]
		switch {
		case ok:
			out = max(out, ps.check(val, depth+1))
		case a.noAdditional:
			return vInvalid
		case a.additional != nil:
			out = max(out, a.additional.check(val, depth+1))
		}
		if out == vInvalid {
			return out
		}
	}
	return out
}

func (a *acceptor) checkString(s string) verdict {
	if a.minLen < 0 && a.maxLen < 0 {
		return vValid
	}
	n := utf8.RuneCountInString(s)
	if (a.minLen >= 0 && n < a.minLen) || (a.maxLen >= 0 && n > a.maxLen) {
		return vInvalid
	}
	return vValid
}

func (a *acceptor) checkNumber(num json.Number) verdict {
	if a.min.rat == nil && a.max.rat == nil {
		return vValid
	}
	if (a.min.rat != nil && !a.min.exact) || (a.max.rat != nil && !a.max.exact) {
		return vUnsure
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return vUnsure
	}
	if (a.min.rat != nil && n < a.min.i) || (a.max.rat != nil && n > a.max.i) {
		return vInvalid
	}
	return vValid
}
