package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"lakehouse/internal/sample"
)

// Recording is a list of recorded SSE data payloads, one event each, in
// stream order. It is what a JSON-lines capture holds.
type Recording struct {
	Events [][]byte
}

// Len returns the number of events.
func (r Recording) Len() int { return len(r.Events) }

// Bytes returns the total size of the events.
func (r Recording) Bytes() int64 {
	var n int64
	for _, e := range r.Events {
		n += int64(len(e))
	}
	return n
}

// ReadRecording reads a JSON-lines recording (blank lines are skipped;
// lines are kept byte for byte, valid or not).
func ReadRecording(r io.Reader) (Recording, error) {
	var rec Recording
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec.Events = append(rec.Events, bytes.Clone(line))
	}
	if err := sc.Err(); err != nil {
		return Recording{}, fmt.Errorf("read recording: %w", err)
	}
	return rec, nil
}

// WriteTo writes the recording as JSON lines.
func (r Recording) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	for _, e := range r.Events {
		k, _ := bw.Write(e)
		n += int64(k)
		if err := bw.WriteByte('\n'); err != nil {
			return n, fmt.Errorf("write recording: %w", err)
		}
		n++
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("write recording: %w", err)
	}
	return n, nil
}

// Padded returns a copy of r whose events are padded (at the end of their
// "comment") to at least size bytes each; they stay valid events.
func (r Recording) Padded(size int) Recording {
	out := Recording{Events: make([][]byte, len(r.Events))}
	for i, data := range r.Events {
		if len(data) >= size {
			out.Events[i] = data
			continue
		}
		m := mustDecodeObject(data)
		c, _ := m["comment"].(string)
		padded := encodeCompact(m)
		for len(padded) < size { // re-encoding may shorten escapes
			c += strings.Repeat("x", size-len(padded))
			m["comment"] = c
			padded = encodeCompact(m)
		}
		out.Events[i] = padded
	}
	return out
}

// Sample returns the 50 real recorded events (19 edit, 1 new, 3 log,
// 27 categorize) embedded in the binary (internal/sample).
func Sample() Recording { return Recording{Events: sample.Events()} }

// Generate makes a deterministic recording of n events in the shape of the
// real stream, starting from the 50 real events: each generated event is a
// real event of the chosen type with a fresh meta.id and request id, an
// editor drawn from a Zipf-distributed pool (registered users, bots,
// IP editors, temporary accounts; the bot flag follows the editor), a wiki
// (a quarter are re-homed to other wikis), fresh rc/revision ids and lengths,
// and times 35 events/s apart from the sample's start with meta.dt 0.6 to
// 6 s after timestamp. Types: about 50% edit, 30% categorize, 12% log,
// 7.5% new, 0.5% external. The same seed and n give the same bytes; every
// event passes the contract.
func Generate(seed int64, n int) Recording {
	g := newGenerator(seed, n)
	rec := Recording{Events: make([][]byte, n)}
	for i := range n {
		rec.Events[i] = g.event(i)
	}
	return rec
}

type editor struct {
	name string
	bot  bool
}

type wikiSite struct {
	wiki, host string
}

// otherWikis are re-homing targets with rough real-stream weights.
var otherWikis = []struct {
	site   wikiSite
	weight int
}{
	{wikiSite{"wikidatawiki", "www.wikidata.org"}, 30},
	{wikiSite{"commonswiki", "commons.wikimedia.org"}, 25},
	{wikiSite{"enwiki", "en.wikipedia.org"}, 20},
	{wikiSite{"dewiki", "de.wikipedia.org"}, 6},
	{wikiSite{"frwiki", "fr.wikipedia.org"}, 6},
	{wikiSite{"eswiki", "es.wikipedia.org"}, 5},
	{wikiSite{"jawiki", "ja.wikipedia.org"}, 4},
	{wikiSite{"ruwiki", "ru.wikipedia.org"}, 4},
	{wikiSite{"itwiki", "it.wikipedia.org"}, 4},
	{wikiSite{"zhwiki", "zh.wikipedia.org"}, 3},
	{wikiSite{"ptwiki", "pt.wikipedia.org"}, 3},
	{wikiSite{"plwiki", "pl.wikipedia.org"}, 2},
	{wikiSite{"nlwiki", "nl.wikipedia.org"}, 2},
	{wikiSite{"arwiki", "ar.wikipedia.org"}, 2},
	{wikiSite{"enwiktionary", "en.wiktionary.org"}, 2},
	{wikiSite{"fawiki", "fa.wikipedia.org"}, 1},
	{wikiSite{"svwiki", "sv.wikipedia.org"}, 1},
	{wikiSite{"ukwiki", "uk.wikipedia.org"}, 1},
	{wikiSite{"metawiki", "meta.wikimedia.org"}, 1},
	{wikiSite{"specieswiki", "species.wikimedia.org"}, 1},
}

var typeWeights = []struct {
	typ    string
	weight int // per mille
}{
	{"edit", 500}, {"categorize", 300}, {"log", 120}, {"new", 75}, {"external", 5},
}

var editorFirst = []string{"Anna", "Bram", "Chen", "Dara", "Emil", "Fatou", "Goran", "Hana", "Ivo", "Jana",
	"Kofi", "Lena", "Mateo", "Nia", "Oskar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Vera", "Wen", "Yusuf", "Zofia"}
var editorLast = []string{"Archivist", "Gnome", "Mapper", "Scribe", "Reader", "Patroller", "Linguist", "Botanist",
	"Historian", "Copyeditor", "Curator", "Translator"}

type generator struct {
	rng       *rand.Rand
	byType    map[string][]map[string]any
	editors   []editor
	zipf      *rand.Zipf
	base      int64 // unix seconds of event 0
	rcid      int64
	revision  int64
	offset    int64
	wikiTotal int
}

func newGenerator(seed int64, n int) *generator {
	g := &generator{
		rng:    rand.New(rand.NewPCG(uint64(seed), 0x6c616b65686f7573)), // "lakehous"
		byType: map[string][]map[string]any{},
	}
	var minTS int64
	for _, raw := range Sample().Events {
		m := mustDecodeObject(raw)
		typ, _ := m["type"].(string)
		g.byType[typ] = append(g.byType[typ], m)
		if ts := jsonInt(m["timestamp"]); minTS == 0 || ts < minTS {
			minTS = ts
		}
		if u, ok := m["user"].(string); ok {
			g.editors = appendEditor(g.editors, editor{name: u, bot: m["bot"] == true})
		}
	}
	g.byType["external"] = g.byType["edit"]
	g.base = minTS
	g.rcid = 3_213_500_000
	g.revision = 1_172_300_000
	g.offset = 2_015_400_000
	for _, w := range otherWikis {
		g.wikiTotal += w.weight
	}
	// Editor pool: the real editors plus synthetic ones, about one editor per
	// 20 events (at least 200), Zipf-distributed so a few editors are busy.
	pool := max(200, n/20)
	for i := len(g.editors); i < pool; i++ {
		switch r := g.rng.IntN(100); {
		case r < 12:
			g.editors = append(g.editors, editor{name: fmt.Sprintf("%s%sBot", editorLast[g.rng.IntN(len(editorLast))], editorFirst[g.rng.IntN(len(editorFirst))]), bot: true})
		case r < 20:
			g.editors = append(g.editors, editor{name: fmt.Sprintf("%d.%d.%d.%d", 1+g.rng.IntN(222), g.rng.IntN(256), g.rng.IntN(256), 1+g.rng.IntN(254))})
		case r < 30:
			g.editors = append(g.editors, editor{name: fmt.Sprintf("~2026-%05d-%02d", g.rng.IntN(100000), g.rng.IntN(100))})
		default:
			g.editors = append(g.editors, editor{name: fmt.Sprintf("%s %s %d", editorFirst[g.rng.IntN(len(editorFirst))], editorLast[g.rng.IntN(len(editorLast))], i)})
		}
	}
	g.zipf = rand.NewZipf(g.rng, 1.1, 4, uint64(len(g.editors)-1))
	return g
}

func appendEditor(es []editor, e editor) []editor {
	for _, x := range es {
		if x.name == e.name {
			return es
		}
	}
	return append(es, e)
}

func (g *generator) pickType() string {
	r := g.rng.IntN(1000)
	for _, t := range typeWeights {
		if r < t.weight {
			return t.typ
		}
		r -= t.weight
	}
	return "edit"
}

func (g *generator) uuid() string {
	var b [16]byte
	hi, lo := g.rng.Uint64(), g.rng.Uint64()
	for i := range 8 {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	return formatUUID(b, 4)
}

func (g *generator) event(i int) []byte {
	typ := g.pickType()
	tmpls := g.byType[typ]
	t := tmpls[g.rng.IntN(len(tmpls))]
	ev := cloneObject(t)
	meta := ev["meta"].(map[string]any)
	ev["type"] = typ

	// Times: 35 events/s, intake 0.6 to 6 s after the edit.
	ts := g.base + int64(i)/35
	delay := 600*time.Millisecond + time.Duration(g.rng.Int64N(int64(5400*time.Millisecond)))
	dt := time.Unix(ts, int64(i%35)*int64(time.Second/35)).Add(delay).UTC()
	ev["timestamp"] = json.Number(fmt.Sprint(ts))
	meta["dt"] = dt.Format(dtLayout)
	meta["id"] = g.uuid()
	meta["request_id"] = g.uuid()
	g.offset++
	meta["offset"] = json.Number(fmt.Sprint(g.offset))

	// Editor.
	ed := g.editors[g.zipf.Uint64()]
	ev["user"] = ed.name
	ev["bot"] = ed.bot

	// Wiki: a quarter move to another wiki.
	if g.rng.IntN(4) == 0 {
		r := g.rng.IntN(g.wikiTotal)
		for _, w := range otherWikis {
			if r < w.weight {
				rehome(ev, meta, w.site)
				break
			}
			r -= w.weight
		}
	}

	// Ids and sizes.
	if _, ok := ev["id"]; ok || typ != "log" {
		g.rcid += 1 + g.rng.Int64N(40)
		ev["id"] = json.Number(fmt.Sprint(g.rcid))
	}
	if typ == "edit" || typ == "new" || typ == "external" {
		g.revision += 1 + g.rng.Int64N(8)
		newLen := int64(50 + g.rng.IntN(120000))
		rev := map[string]any{"new": json.Number(fmt.Sprint(g.revision))}
		length := map[string]any{"new": json.Number(fmt.Sprint(newLen))}
		if typ != "new" {
			rev["old"] = json.Number(fmt.Sprint(g.revision - 1 - g.rng.Int64N(5_000_000)))
			length["old"] = json.Number(fmt.Sprint(max(0, newLen-int64(g.rng.IntN(2000))+1000)))
			ev["minor"] = g.rng.IntN(3) == 0
		}
		ev["revision"] = rev
		ev["length"] = length
	}
	return encodeCompact(ev)
}

// rehome moves an event to another wiki, rewriting every host-bearing field.
func rehome(ev, meta map[string]any, w wikiSite) {
	oldHost, _ := ev["server_name"].(string)
	if oldHost == "" {
		return
	}
	swap := func(m map[string]any, k string) {
		if s, ok := m[k].(string); ok {
			m[k] = strings.ReplaceAll(s, oldHost, w.host)
		}
	}
	for _, k := range []string{"title_url", "notify_url", "server_url"} {
		swap(ev, k)
	}
	swap(meta, "uri")
	ev["server_name"] = w.host
	ev["wiki"] = w.wiki
	meta["domain"] = w.host
}

const dtLayout = "2006-01-02T15:04:05.000Z"

// mustDecodeObject decodes an embedded event (numbers as json.Number, so
// they are written back as they were).
func mustDecodeObject(raw []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(fmt.Sprintf("decode embedded event: %v", err))
	}
	return v.(map[string]any)
}

// cloneObject copies the top level and the nested objects the generator
// mutates (meta, revision, length).
func cloneObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && (k == "meta" || k == "revision" || k == "length") {
			c := make(map[string]any, len(sub))
			for kk, vv := range sub {
				c[kk] = vv
			}
			v = c
		}
		out[k] = v
	}
	return out
}

func encodeCompact(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encode event: %v", err))
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func jsonInt(v any) int64 {
	if n, ok := v.(json.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return 0
}

func formatUUID(b [16]byte, version byte) string {
	b[6] = b[6]&0x0f | version<<4
	b[8] = b[8]&0x3f | 0x80
	const hexd = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j] = hexd[c>>4]
		out[j+1] = hexd[c&0xf]
		j += 2
	}
	return string(out)
}
