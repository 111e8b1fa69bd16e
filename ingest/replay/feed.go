package replay

// Feed enqueues an endless loop over a recording a few events at a time, so
// that the caller shapes the rate over time (a soak enqueues every 100 ms
// what its rate function says is due, and the replay sends flat out). Every
// pass over the recording is a loop pass with fresh meta.ids, numbered with
// the passes of Loops; Counts are exact after every call: Loops counts
// a pass from its first event, OnTime and OnTimeEditNew count the events
// enqueued so far. A pass that is only partly enqueued is resent by Resend
// as far as it got. A Feed is not safe for concurrent use; the Server it
// feeds is.
type Feed struct {
	r       *Server
	tmpls   []*template
	editNew []int64 // editNew[i]: edit/new events among tmpls[:i]
	loop    int     // the current pass (-1: none yet)
	pos     int     // next template of the current pass
	viol    int     // violations enqueued through this Feed
}

// Feed returns a Feed that loops over rec, which must hold at least one
// event with a unique meta.id (Generate's and Sample's do).
func (r *Server) Feed(rec Recording) *Feed {
	f := &Feed{r: r, tmpls: make([]*template, len(rec.Events)), editNew: make([]int64, len(rec.Events)+1), loop: -1}
	for i, data := range rec.Events {
		f.tmpls[i] = newTemplate(data)
		f.editNew[i+1] = f.editNew[i]
		if t := f.tmpls[i].typ; t == "edit" || t == "new" {
			f.editNew[i+1]++
		}
	}
	return f
}

// Next enqueues the next n events of the loop, starting new passes as
// needed.
func (f *Feed) Next(n int) {
	if len(f.tmpls) == 0 {
		return
	}
	for n > 0 {
		newPass := f.loop < 0 || f.pos == len(f.tmpls)
		if newPass {
			f.r.mu.Lock()
			f.loop = len(f.r.loops)
			f.r.loops = append(f.r.loops, nil)
			f.r.mu.Unlock()
			f.pos = 0
		}
		k := min(n, len(f.tmpls)-f.pos)
		es := make([]entry, k)
		for i := range k {
			es[i] = entry{t: f.tmpls[f.pos+i], kind: KindLoop, loop: f.loop}
		}
		from, to, loop := f.pos, f.pos+k, f.loop
		f.r.add(es, func(c *Counts) {
			// add holds the replay's lock while it applies counts.
			f.r.loops[loop] = f.tmpls[:to:to]
			if newPass {
				c.Loops++
			}
			c.OnTime += int64(k)
			c.OnTimeEditNew += f.editNew[to] - f.editNew[from]
		})
		f.pos = to
		n -= k
	}
}

// Violations enqueues n contract violations, continuing the cycle through
// ViolationKinds where this Feed's previous call left it (Server.Violations
// starts every call at the first kind).
func (f *Feed) Violations(n int) {
	f.r.violations(n, f.viol)
	f.viol += n
}
