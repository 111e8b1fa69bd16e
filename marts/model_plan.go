package marts

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"lakehouse/table"
)

// What a model table records it was built from, what its inputs hold
// now, and from the two the units a refresh rebuilds (model_build.go has
// the rule).

const propModel = table.PropPrefix + "marts.model"

// modelState is a model table's record of what it was built from.
type modelState struct {
	V      int    `json:"v"`
	Run    string `json:"run"`
	File   string `json:"file"`   // the model's file, absolute
	Def    string `json:"def"`    // compiled.def, hex
	Unit   string `json:"unit"`   // ModelUnit.String()
	Prints string `json:"prints"` // encodePrints of its inputs' units
}

// unitStep is the unit's length for fingerprints: a whole table is one
// unit, at 0.
func unitStep(u ModelUnit) time.Duration {
	if l := u.length(); l > 0 {
		return l
	}
	return time.Second
}

// planned is a source's live files as one refresh of the models sees
// them, with the fingerprints of its units at its own grain (nil: not
// known, every model reading it is rebuilt whole).
type planned struct {
	src    *source
	files  table.Files
	prints prints        // by unit of step
	step   time.Duration // the grain of prints (0: silver, fingerprinted per model)
	why    string        // why prints is nil
}

// planSource plans a source's live files and what its units hold; pre,
// when it holds the source, is its files as the refresh planned them
// (silver with the bounds of its time column, a built-in mart as
// written), so the models read what the built-in marts read.
func (m *Marts) planSource(ctx context.Context, s *source, pre map[string]table.Files) (planned, error) {
	p := planned{src: s}
	f, ok := pre[s.ident]
	var err error
	switch {
	case ok:
		p.files = f
	case s.grain == grainEvent:
		p.files, err = m.lake.DataFilesWithBounds(ctx, s.ident, s.timeCol)
	default:
		p.files, err = m.lake.DataFiles(ctx, s.ident)
	}
	if s.grain == grainEvent {
		return p, wrapPlan(s.ident, err)
	}
	if isNoTable(err) {
		p.files, p.why = table.Files{Schema: s.schema}, s.ident+" is not written yet"
		if s.model != nil {
			sc, serr := icebergSchemaOf(s.model.schema)
			if serr != nil {
				return p, serr
			}
			p.files.Schema = sc
		}
		return p, nil
	}
	if err != nil {
		return p, wrapPlan(s.ident, err)
	}
	switch {
	case s.model != nil:
		st, why := readModelState(p.files, s.model)
		if why != "" {
			p.why = s.ident + ": " + why
			break
		}
		p.step = unitStep(s.model.Unit)
		p.prints, err = decodePrints(st.Prints, p.step)
		if err != nil {
			p.why = s.ident + ": " + err.Error()
		}
	case s.grain == grainTable:
		// hot_pages: rebuilt whole every time; its files are its state.
		h := fnv.New64a()
		for _, f := range slices.Sorted(slices.Values(p.files.Paths)) {
			fmt.Fprintf(h, "%s\x00", m.fileKey()(f))
		}
		p.step, p.prints = time.Second, prints{0: h.Sum64()}
	default:
		var b builtFrom
		raw, ok := p.files.Properties[propBuiltFrom]
		switch {
		case !ok:
			p.why = s.ident + " has no record of what it was built from"
		case !p.files.Overwritten:
			p.why = s.ident + "'s rows changed since it was built"
		case json.Unmarshal([]byte(raw), &b) != nil || b.V != stateVersion || b.Unit <= 0:
			p.why = s.ident + "'s record of what it was built from is unreadable"
		default:
			p.step = time.Duration(b.Unit) * time.Second
			if p.prints, err = decodePrints(b.Prints, p.step); err != nil {
				p.why = s.ident + ": " + err.Error()
			}
		}
	}
	return p, nil
}

func wrapPlan(ident string, err error) error {
	if err != nil {
		return fmt.Errorf("plan %s: %w", ident, err)
	}
	return nil
}

// readModelState returns a model table's record, if it describes the
// table's rows and the model as compiled now ("" why), else why not.
func readModelState(f table.Files, c *compiled) (modelState, string) {
	raw, ok := f.Properties[propModel]
	if !ok {
		return modelState{}, "no record of what it was built from"
	}
	var st modelState
	if err := json.Unmarshal([]byte(raw), &st); err != nil || st.V != stateVersion {
		return modelState{}, "its record of what it was built from is unreadable"
	}
	switch {
	case !f.Overwritten:
		return modelState{}, "its rows changed since it was built (another writer)"
	case st.Def != strconv.FormatUint(c.def, 16):
		return modelState{}, "its SQL changed"
	case st.Unit != c.Unit.String():
		return modelState{}, "its unit changed"
	}
	return st, ""
}

// unitPrints are the fingerprints of a model's units: per unit, a hash of
// each input's fingerprint of it. ok is false (with why) when an input's
// units are not known.
func (m *Marts) unitPrints(c *compiled, in map[string]planned) (prints, string) {
	step := unitStep(c.Unit)
	whole := c.Unit.Kind == UnitTable
	per := map[string]prints{}
	for _, ident := range c.inputs {
		p := in[ident]
		if p.src.grain == grainEvent {
			if whole {
				h := fnv.New64a()
				for i, f := range p.files.Paths {
					fmt.Fprintf(h, "%s\x00%d\x00", m.fileKey()(f), p.files.Bounds[i].Rows)
				}
				per[ident] = prints{0: h.Sum64()}
				continue
			}
			fp, ok := fingerprints(p.files, step, m.fileKey())
			if !ok {
				return nil, "a file of " + ident + " has no time bounds"
			}
			per[ident] = fp
			continue
		}
		if p.prints == nil {
			return nil, p.why
		}
		per[ident] = coarsen(p.prints, p.step, step, whole)
	}
	units := map[int64]bool{}
	for _, fp := range per {
		for u := range fp {
			units[u] = true
		}
	}
	out := prints{}
	for u := range units {
		h := fnv.New64a()
		for _, ident := range c.inputs {
			fmt.Fprintf(h, "%s\x00%d\x00", ident, per[ident][u])
		}
		out[u] = h.Sum64()
	}
	return out, ""
}

// coarsen hashes fingerprints of units of from into units of to (one
// unit, 0, when whole).
func coarsen(p prints, from, to time.Duration, whole bool) prints {
	if from == to && !whole {
		return p
	}
	groups := map[int64][]int64{}
	for u := range p {
		t := int64(0)
		if !whole {
			s := int64(to / time.Second)
			t = u - ((u%s)+s)%s
		}
		groups[t] = append(groups[t], u)
	}
	out := prints{}
	for t, us := range groups {
		slices.Sort(us)
		h := fnv.New64a()
		for _, u := range us {
			fmt.Fprintf(h, "%d:%d\x00", u, p[u])
		}
		out[t] = h.Sum64()
	}
	return out
}
