package ingest

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"lakehouse/internal/jsonlex"
	"lakehouse/internal/recentchange"
)

// The single pass checks an event as it reads its bytes, with no value
// tree: the lexer's one pass over the text drives the contract's compiled
// plans (contract_plan.go), the rules of contract_rules.go, and the
// routing fields. Like the acceptor it only passes: it returns true only
// for an event it is certain is valid, with the Event the decoded path
// returns; anything else (a violation, a flaw of the text, a keyword it
// leaves to the library, a document nested too deep) goes to the decoded
// path, whose verdict and DLQ reason are the library's. A CPU profile of
// the appliance at 10,000 events/s had the decoded path's value tree, the
// acceptor's walk of it and the key rules at 9 µs of the 46 per event.
// TestSinglePassSameResult and FuzzSinglePassSameResult compare the two
// paths on every input class.

// pathRule is what contract_rules.go asks of the value at one path of an
// event: the member names its keys may not match only ignoring case, the
// integer silver stores there, and the routing field it is.
type pathRule struct {
	fold    []string
	members map[string]*pathRule
	bits    int        // an integer silver stores, in bits; 0: none
	field   eventField // a field of Event or one the time rules read
}

type eventField uint8

const (
	fieldNone eventField = iota
	fieldType
	fieldID
	fieldDomain
	fieldDT
	fieldTimestamp
)

// eventRules are the paths of textRules and valueRules: keys ignoring case
// at the root, in meta, length and revision; the integers of
// recentchange.Ints; the fields CheckAt returns and the times it checks.
var eventRules = func() *pathRule {
	root := &pathRule{fold: recentchange.EventFields, members: map[string]*pathRule{}}
	at := func(path ...string) *pathRule {
		r := root
		for _, name := range path {
			next := r.members[name]
			if next == nil {
				next = &pathRule{members: map[string]*pathRule{}}
				r.members[name] = next
			}
			r = next
		}
		return r
	}
	at("meta").fold = recentchange.MetaFields
	for _, k := range []string{"length", "revision"} {
		at(k).fold = recentchange.OldNewFields
	}
	for _, in := range recentchange.Ints {
		at(in.Path...).bits = in.Bits
	}
	at("type").field = fieldType
	at("timestamp").field = fieldTimestamp
	at("meta", "id").field = fieldID
	at("meta", "domain").field = fieldDomain
	at("meta", "dt").field = fieldDT
	return root
}()

// passer is the state of one single pass; a pool keeps them.
type passer struct {
	jsonlex.Lexer
	pre, tail []verdict // per acceptor of each open value: see value
	res       []verdict // the member values' verdicts, per root
	keys      []string  // the names no plan mentions, of the open objects
	text      []byte    // the event's unquoted strings
	empty     *plan
	fields    [fieldTimestamp + 1]string
	has       [fieldTimestamp + 1]bool
	ts        int64
}

var passPool = sync.Pool{New: func() any { return &passer{text: make([]byte, 0, 4096)} }}

// pass is CheckAt's single pass: the event and true when raw is certainly
// valid, false when the decoded path decides.
func (c *Contract) pass(raw []byte, received time.Time) (Event, bool) {
	p := passPool.Get().(*passer)
	defer func() {
		p.B, p.pre, p.tail, p.res, p.keys = nil, p.pre[:0], p.tail[:0], p.res[:0], p.keys[:0]
		if cap(p.text) > 64<<10 {
			p.text = make([]byte, 0, 4096)
		}
		p.text = p.text[:0]
		clear(p.fields[:])
		passPool.Put(p)
	}()
	p.Lexer = jsonlex.Lexer{B: raw}
	p.empty = c.plan.empty
	p.has = [fieldTimestamp + 1]bool{}
	p.Space()
	p.res = append(p.res, 0)
	if !p.value(c.plan.root, 0, 0, eventRules) {
		return Event{}, false
	}
	if p.Space(); p.I != len(p.B) || p.res[0] != vValid {
		return Event{}, false
	}
	if !p.has[fieldType] || !p.has[fieldID] || !p.has[fieldDomain] || !p.has[fieldDT] {
		return Event{}, false // the schema requires them: not reached for a valid event
	}
	dt, err := recentchange.ParseDT(p.fields[fieldDT])
	if err != nil {
		return Event{}, false
	}
	if p.has[fieldTimestamp] && recentchange.CheckTimes(p.ts, dt, received, c.maxAhead) != nil {
		return Event{}, false
	}
	return Event{
		ID:        strings.Clone(p.fields[fieldID]),
		Domain:    strings.Clone(p.fields[fieldDomain]),
		Type:      strings.Clone(p.fields[fieldType]),
		Timestamp: p.ts,
	}, true
}

// Kinds of value, as the acceptor's type bits; a number is tNumber.
var (
	anObject any = map[string]any(nil)
	anArray  any = []any(nil)
)

// value reads the value at I with plan pl and stores the verdict of each of
// pl's roots at p.res[out:]. base bounds the depth at which the acceptor
// would check pl's roots (a plan's chain adds to it), so that a verdict here
// is the acceptor's: beyond its depth limit the decoded path decides. rule
// is what contract_rules.go asks of the value (nil: nothing).
func (p *passer) value(pl *plan, out, base int, rule *pathRule) bool {
	if pl.cyclic || base+pl.chain > maxAcceptDepth || p.I >= len(p.B) {
		return false
	}
	n := len(pl.accs)
	f := len(p.pre)
	for range n {
		p.pre = append(p.pre, vValid)
		p.tail = append(p.tail, vValid)
	}
	defer func() { p.pre, p.tail = p.pre[:f], p.tail[:f] }()
	kind, str, lit := 0, "", ""
	var val any // the decoded value, made only when a keyword takes one
	switch c := p.B[p.I]; {
	case c == '{':
		if !p.object(pl, f, base, rule) {
			return false
		}
		kind, val = tObject, anObject
	case c == '[':
		if !p.array(base) {
			return false
		}
		kind, val = tArray, anArray
	case c == '"':
		s, ok := p.str()
		if !ok {
			return false
		}
		kind, str = tString, s
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.I
		if !p.Number() {
			return false
		}
		kind, lit = tNumber, unsafeString(p.B[start:p.I])
	case c == 't' || c == 'f':
		word := "true"
		if c == 'f' {
			word = "false"
		}
		if !p.Lit(word) {
			return false
		}
		kind, val = tBoolean, c == 't'
	case c == 'n':
		if !p.Lit("null") {
			return false
		}
		kind = tNull
	default:
		return false
	}
	if rule != nil && !p.capture(rule, kind, str, lit) {
		return false
	}
	decoded := func() any {
		if val == nil && kind == tString {
			val = str
		} else if val == nil && kind == tNumber {
			val = json.Number(lit)
		}
		return val
	}
	pre, tail := p.pre[f:f+n], p.tail[f:f+n]
	for i, a := range pl.accs {
		if a.boolean != nil || a.unsure {
			continue // combine decides
		}
		v := vValid
		if a.types != 0 {
			v = a.typeOf(kind, lit)
		}
		if v != vInvalid && a.enum != nil {
			if _, ok := a.enum[str]; kind != tString || !ok {
				v = vInvalid
			}
		}
		if v != vInvalid && a.format != nil && a.format.Validate(decoded()) != nil {
			v = vInvalid
		}
		pre[i] = v
		if a.ref != nil {
			continue
		}
		t := tail[i]
		switch kind {
		case tString:
			t = max(t, a.checkString(str))
		case tNumber:
			t = max(t, a.checkNumber(json.Number(lit)))
		}
		for _, nc := range a.numbers {
			if nc.check(decoded()) != 0 {
				t = vInvalid
			}
		}
		tail[i] = t
	}
	for j, r := range pl.roots {
		p.res[out+j] = pl.combine(pre, tail, r)
	}
	return true
}

// typeOf is checkType for a value of kind (lit: a number's text).
func (a *acceptor) typeOf(kind int, lit string) verdict {
	if kind != tNumber {
		if a.types&kind == 0 {
			return vInvalid
		}
		return vValid
	}
	if a.types&tNumber != 0 {
		return vValid
	}
	if a.types&tInteger == 0 {
		return vInvalid
	}
	if _, err := strconv.ParseInt(lit, 10, 64); err != nil {
		return vUnsure // 1.0 and 1e3 are integers too, and long literals
	}
	return vValid
}

// combine is the acceptor's check of accs[i] on a value whose keywords'
// verdicts are pre (type, enum, format) and tail (the value's own rules:
// members and required, length, bounds, the number keyword), following
// $ref, allOf and if/then/else within the plan, in check's order.
func (pl *plan) combine(pre, tail []verdict, i int) verdict {
	a := pl.accs[i]
	if a.boolean != nil {
		if *a.boolean {
			return vValid
		}
		return vInvalid
	}
	if a.unsure {
		return vUnsure
	}
	out := pre[i]
	if out == vInvalid {
		return out
	}
	if r := pl.ref[i]; r >= 0 {
		return max(out, pl.combine(pre, tail, r))
	}
	if out = max(out, tail[i]); out == vInvalid {
		return out
	}
	for _, j := range pl.allOf[i] {
		if out = max(out, pl.combine(pre, tail, j)); out == vInvalid {
			return out
		}
	}
	if k := pl.ifA[i]; k >= 0 {
		switch pl.combine(pre, tail, k) {
		case vValid:
			if t := pl.thenA[i]; t >= 0 {
				out = max(out, pl.combine(pre, tail, t))
			}
		case vInvalid:
			if e := pl.elseA[i]; e >= 0 {
				out = max(out, pl.combine(pre, tail, e))
			}
		default:
			return vUnsure
		}
	}
	return out
}

// object reads the object at I (its '{') whose acceptors' verdicts are at
// frame f: each member's value with its member plan, the member verdicts
// into tail, then required. A key given twice, or one that matches a name
// of rule.fold only ignoring case, ends the pass.
func (p *passer) object(pl *plan, f, base int, rule *pathRule) bool {
	p.I++
	var seen uint64
	k0 := len(p.keys)
	defer func() { p.keys = p.keys[:k0] }()
	p.Space()
	if p.I < len(p.B) && p.B[p.I] == '}' {
		p.I++
	} else {
		for {
			p.Space()
			name, ok := p.str()
			if !ok || !p.Byte(':') {
				return false
			}
			p.Space()
			m := pl.named[name]
			if m == nil {
				if slices.Contains(p.keys[k0:], name) {
					return false
				}
				p.keys = append(p.keys, name)
				m = pl.other
			} else if bit := uint64(1) << m.slot; seen&bit != 0 {
				return false
			} else {
				seen |= bit
			}
			var sub *pathRule
			if rule != nil {
				if rule.fold != nil && mayFold(name) && !slices.Contains(rule.fold, name) {
					if _, folded := recentchange.FoldsTo(name, rule.fold); folded {
						return false
					}
				}
				sub = rule.members[name]
			}
			r0 := len(p.res)
			for range m.child.roots {
				p.res = append(p.res, vValid)
			}
			if !p.value(m.child, r0, base+pl.chain+1, sub) {
				return false
			}
			for j, parent := range m.parents {
				p.tail[f+parent] = max(p.tail[f+parent], p.res[r0+j])
			}
			p.res = p.res[:r0]
			for _, i := range m.refused {
				p.tail[f+i] = vInvalid
			}
			end, ok := p.Next('}')
			if !ok {
				return false
			}
			if end {
				break
			}
		}
	}
	for i, slots := range pl.required {
		for _, s := range slots {
			if seen&(uint64(1)<<s) == 0 {
				p.tail[f+i] = vInvalid
			}
		}
	}
	return true
}

// array reads the array at I (its '['): no acceptor checks items (the
// acceptor leaves items to the library), but their text must be clean.
func (p *passer) array(base int) bool {
	p.I++
	p.Space()
	if p.I < len(p.B) && p.B[p.I] == ']' {
		p.I++
		return true
	}
	for {
		p.Space()
		if !p.value(p.empty, len(p.res), base+1, nil) {
			return false
		}
		end, ok := p.Next(']')
		if !ok {
			return false
		}
		if end {
			return true
		}
	}
}

// str reads a string: its value, sharing raw's memory when it has no
// escapes; false for invalid UTF-8 or a lone surrogate escape (flaws the
// decoded path reports).
func (p *passer) str() (string, bool) {
	body, escaped, bad, ok := p.String()
	if !ok || bad >= 0 {
		return "", false
	}
	if !escaped {
		return unsafeString(body), true
	}
	start := len(p.text)
	arena := cap(p.text)-start >= 3*len(body) // Unquote writes there only then
	out, lone, ok := jsonlex.Unquote(p.text[start:start], body)
	if !ok || lone >= 0 {
		return "", false
	}
	if arena {
		p.text = p.text[:start+len(out)]
	}
	return unsafeString(out), true
}

// capture applies rule to a scalar value: an integer silver stores must
// parse in its bits (else the decoded path gives the reason), and the
// fields of Event and of the time rules are kept.
func (p *passer) capture(rule *pathRule, kind int, str, lit string) bool {
	if rule.bits > 0 && kind == tNumber {
		n, err := strconv.ParseInt(lit, 10, rule.bits)
		if err != nil {
			return false
		}
		if rule.field == fieldTimestamp {
			p.ts, p.has[fieldTimestamp] = n, true
		}
		return true
	}
	if rule.field != fieldNone && rule.field != fieldTimestamp && kind == tString {
		p.fields[rule.field], p.has[rule.field] = str, true
	}
	return true
}

// mayFold reports whether key has an upper-case ASCII letter or a
// non-ASCII byte: a key of neither folds to itself, so it matches a
// (lower-case ASCII) name ignoring case only when it is that name.
func mayFold(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}
