package ingest

import (
	"slices"
	"strconv"
	"strings"
)

// A plan is the acceptors that apply to one value of an event, compiled
// once from the acceptor so that the single pass (contract_pass.go) can
// check a value as it reads it: the acceptors its parent's members name
// (the roots) and every acceptor they reach through $ref, allOf, if, then
// and else, which apply to the same value. An object's members have plans
// of their own: per member name the acceptors that name it in properties
// (or let it in through additionalProperties).
type plan struct {
	accs   []*acceptor // the closure, roots first
	roots  []int       // the roots, as indexes into accs (a root may repeat)
	ref    []int       // per acceptor: its $ref's index, -1 for none
	allOf  [][]int
	ifA    []int // -1 for none
	thenA  []int
	elseA  []int
	chain  int  // the longest $ref/allOf/if/then/else chain from a root
	cyclic bool // a chain leads back to an acceptor on it

	// members, for an object value
	named    map[string]*memberPlan // names that properties or required mention
	other    *memberPlan            // any other name
	required [][]int                // per acceptor: the slots of its required names
	objects  bool                   // some acceptor has object rules
}

// memberPlan is what applies to the value of one member name.
type memberPlan struct {
	slot    int   // the name's bit among the plan's named members; -1 for other
	child   *plan // the member value's plan
	parents []int // per root of child: the acceptor of the object that named it
	refused []int // acceptors of the object that refuse the member (additionalProperties false)
}

// Limits of what a plan compiles; beyond them the pass leaves the event to
// the decoded path.
const (
	maxPlanNames = 64   // named members per object plan (a bit each)
	maxPlans     = 4096 // plans per contract
)

// objectRules reports whether a's properties, required and
// additionalProperties apply to an object it checks: a boolean or unsure
// acceptor, or one with a $ref (draft 7: the keywords beside it are
// ignored), has none.
func (a *acceptor) objectRules() bool {
	return a.boolean == nil && !a.unsure && a.ref == nil
}

type planCompiler struct {
	plans  map[string]*plan
	ids    map[*acceptor]int // names acceptors in the plans' keys
	tooBig bool
}

// contractPlan is the single pass's compiled contract: the plan of an
// event and the plan of values no acceptor checks (array items).
type contractPlan struct {
	root, empty *plan
}

// compilePlan compiles the plans of the acceptor root; nil when they would
// be too many.
func compilePlan(root *acceptor) *contractPlan {
	c := planCompiler{plans: map[string]*plan{}, ids: map[*acceptor]int{}}
	out := &contractPlan{root: c.plan([]*acceptor{root}), empty: c.plan(nil)}
	if c.tooBig {
		return nil
	}
	return out
}

// plan returns the plan of roots, compiled once per distinct list.
func (c *planCompiler) plan(roots []*acceptor) *plan {
	var key strings.Builder
	for _, a := range roots {
		id, ok := c.ids[a]
		if !ok {
			id = len(c.ids)
			c.ids[a] = id
		}
		key.WriteString(strconv.Itoa(id))
		key.WriteByte(',')
	}
	if p, ok := c.plans[key.String()]; ok {
		return p
	}
	if len(c.plans) >= maxPlans {
		c.tooBig = true
		return &plan{cyclic: true}
	}
	p := &plan{}
	c.plans[key.String()] = p // before the members: a member may lead back here
	idx := map[*acceptor]int{}
	add := func(a *acceptor) int {
		if i, ok := idx[a]; ok {
			return i
		}
		idx[a] = len(p.accs)
		p.accs = append(p.accs, a)
		return len(p.accs) - 1
	}
	for _, a := range roots {
		p.roots = append(p.roots, add(a))
	}
	for i := 0; i < len(p.accs); i++ { // the closure; accs grows as it goes
		a := p.accs[i]
		link := func(s *acceptor) int {
			if s == nil {
				return -1
			}
			return add(s)
		}
		p.ref = append(p.ref, link(a.ref))
		var all []int
		for _, s := range a.allOf {
			all = append(all, add(s))
		}
		p.allOf = append(p.allOf, all)
		p.ifA = append(p.ifA, link(a.ifA))
		p.thenA = append(p.thenA, link(a.thenA))
		p.elseA = append(p.elseA, link(a.elseA))
	}
	p.chainLength()
	c.members(p)
	return p
}

// chainLength sets p.chain, or p.cyclic when a chain has a cycle.
func (p *plan) chainLength() {
	const (
		unseen = iota
		open
		done
	)
	state := make([]int, len(p.accs))
	length := make([]int, len(p.accs))
	var walk func(i int) int
	walk = func(i int) int {
		switch state[i] {
		case open:
			p.cyclic = true
			return 0
		case done:
			return length[i]
		}
		state[i] = open
		n := 0
		next := append([]int{p.ref[i], p.ifA[i], p.thenA[i], p.elseA[i]}, p.allOf[i]...)
		for _, j := range next {
			if j >= 0 {
				n = max(n, 1+walk(j))
			}
		}
		state[i], length[i] = done, n
		return n
	}
	for _, r := range p.roots {
		p.chain = max(p.chain, walk(r))
	}
}

// members compiles the plans of p's member names.
func (c *planCompiler) members(p *plan) {
	var names []string
	for _, a := range p.accs {
		if !a.objectRules() {
			continue
		}
		p.objects = true
		for _, pa := range a.propList {
			names = append(names, pa.name)
		}
		names = append(names, a.required...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > maxPlanNames {
		p.cyclic = true // too many to track: left to the decoded path
		return
	}
	p.named = make(map[string]*memberPlan, len(names))
	for slot, name := range names {
		p.named[name] = c.member(p, name, slot)
	}
	p.other = c.member(p, "", -1)
	p.required = make([][]int, len(p.accs))
	for i, a := range p.accs {
		if a.objectRules() {
			for _, name := range a.required {
				p.required[i] = append(p.required[i], p.named[name].slot)
			}
		}
	}
}

// member compiles what applies to the member name (slot -1: a name no
// acceptor of p mentions).
func (c *planCompiler) member(p *plan, name string, slot int) *memberPlan {
	m := &memberPlan{slot: slot}
	var roots []*acceptor
	for i, a := range p.accs {
		if !a.objectRules() {
			continue
		}
		var s *acceptor
		if slot >= 0 {
			s = a.props[name]
		}
		switch {
		case s != nil:
		case a.additional != nil:
			s = a.additional
		case a.noAdditional:
			m.refused = append(m.refused, i)
			continue
		default:
			continue
		}
		roots = append(roots, s)
		m.parents = append(m.parents, i)
	}
	m.child = c.plan(roots)
	return m
}
