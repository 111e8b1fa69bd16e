package kafka

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// How a Read tells committed records from aborted ones.
//
// A read_committed fetch response holds the partition's batches up to its
// last stable offset, aborted ones included, with a list of the aborted
// transactions they overlap; a client is meant to drop the records the
// list names. The Log does not take that list's word for it: kfake (the
// cluster the appliance's tests and `prove --broker kafka` run on) leaves
// the list out of a response it cuts at the request's byte limit, and a
// reader trusting it then returns aborted records as committed whenever it
// reads more than a fetch behind the end (bronze landed aborted records
// while draining a backlog). Instead every transactional record is judged
// by its transaction's marker: the commit or abort control record written
// to the partition after the transaction's records, the first one of the
// same producer that follows them. A record whose marker is not in the
// response is not returned from it: the next fetch starts at it, and when
// it is the response's first record (a transaction larger than a fetch)
// the Log looks ahead for the marker (lookAhead). Records without the
// transactional flag (other, non-transactional producers) are committed.
//
// The list still serves as a cross-check: a record the list names as
// aborted but its marker commits means the broker and its log disagree,
// and the Read fails rather than pick one (errContradiction).

// outcome is what a marker says of its transaction.
type outcome uint8

const (
	undecided outcome = iota // no marker seen
	committed
	aborted
)

func (o outcome) String() string {
	switch o {
	case committed:
		return "commit"
	case aborted:
		return "abort"
	}
	return "none"
}

// markerOf returns what control record r says (undecided if r is no
// commit or abort marker). A control record's key is an int16 version
// and an int16 type: 0 abort, 1 commit.
func markerOf(r *kgo.Record) outcome {
	if !r.Attrs.IsControl() || len(r.Key) < 4 {
		return undecided
	}
	switch binary.BigEndian.Uint16(r.Key[2:4]) {
	case 0:
		return aborted
	case 1:
		return committed
	}
	return undecided
}

// txnOutcome is a transaction's fate found beyond a fetch response by
// lookAhead: producer's records at offsets in [first, marker) belong to
// the transaction its marker at offset marker ends (no marker of the
// producer lies between).
type txnOutcome struct {
	producer      int64
	first, marker int64
	outcome       outcome
}

// covers reports whether t decides transactional record r.
func (t *txnOutcome) covers(r *kgo.Record) bool {
	return t != nil && t.outcome != undecided && r.ProducerID == t.producer && t.first <= r.Offset && r.Offset < t.marker
}

// decide judges recs, the records and control records of one fetch
// response in offset order. It returns the committed data records that
// precede the first transactional record whose outcome neither a later
// marker in recs nor known tells, and that record's index (len(recs) when
// every record is decided). Records from that index on are not judged.
func decide(recs []*kgo.Record, known *txnOutcome) (keep []*kgo.Record, cut int) {
	verdict := make([]outcome, len(recs))
	next := map[int64]outcome{} // producer -> the outcome of its next marker, walking back
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		switch {
		case r.Attrs.IsControl():
			if o := markerOf(r); o != undecided {
				next[r.ProducerID] = o
			}
			verdict[i] = aborted // never returned
		case !r.Attrs.IsTransactional():
			verdict[i] = committed
		case next[r.ProducerID] != undecided:
			verdict[i] = next[r.ProducerID]
		case known.covers(r):
			verdict[i] = known.outcome
		}
	}
	cut = len(recs)
	for i, v := range verdict {
		if v == undecided {
			cut = i
			break
		}
	}
	keep = recs[:0:0]
	for i, r := range recs[:cut] {
		if verdict[i] == committed {
			keep = append(keep, r)
		}
	}
	return keep, cut
}

// listedAborted returns the offsets of the data records of recs that the
// response's list of aborted transactions names, as franz-go's
// read_committed reading would drop them: a producer's transactional
// records from a listed first offset up to its next abort marker.
func listedAborted(list []kmsg.FetchResponseTopicPartitionAbortedTransaction, recs []*kgo.Record) map[int64]bool {
	if len(list) == 0 {
		return nil
	}
	firsts := map[int64][]int64{}
	for _, a := range list {
		firsts[a.ProducerID] = append(firsts[a.ProducerID], a.FirstOffset)
	}
	for _, f := range firsts {
		slices.Sort(f)
	}
	out := map[int64]bool{}
	for _, r := range recs {
		f := firsts[r.ProducerID]
		if !r.Attrs.IsTransactional() || len(f) == 0 || r.Offset < f[0] {
			continue
		}
		if !r.Attrs.IsControl() {
			out[r.Offset] = true
		} else if markerOf(r) == aborted {
			firsts[r.ProducerID] = f[1:]
		}
	}
	return out
}
