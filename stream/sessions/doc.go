// Package sessions is the sessions streaming query: it reads committed
// silver.edits snapshots in commit order and builds silver.editor_sessions,
// one row per editor session.
//
// An editor is the pair (wiki, user): the same account on two wikis is two
// editors, because activity on different wikis is different work (and IP
// and temporary editors are per wiki anyway). Walking an editor's edits in
// event time, a session is a run in which no gap between consecutive edits
// exceeds SessionGap and which lasts at most MaxSessionLength (4 hours by
// default) from its first edit: the edit after either ends it starts the
// next session. Edits may arrive out of order (an edit that falls between
// two open sessions merges them), and the sessions are the same whatever
// the batching: an editor whose open session nears the maximum has its
// edits held back until the watermark passes them, then folded in event
// time (see state.add). A session is emitted once the batch's watermark
// passes its last edit plus SessionGap (no on-time edit can extend it any
// more), with a deterministic id: the first 16 bytes of
// SHA-256(wiki, user, start), hex. Its bot flag is set when any of its edits
// was flagged bot; pages counts distinct titles; bytes added and removed sum
// the positive and the negative byte deltas. The state keeps a page as a
// 64-bit id (pageOf: a prefix of the title's SHA-256), not its title, so
// an open page costs about 25 bytes of memory.
//
// The watermark is the newest event time seen in earlier batches minus
// WatermarkDelay (silver's own delay, so silver's rows are never late here;
// any that are, for example after a configuration change, are dropped and
// counted as late). Batch N's watermark is fixed in its offset entry.
//
// What survives a crash: the open sessions and held edits after batch N
// are saved durably as state/N before N's table commit, whose marker and
// summary (watermark, state version, late count) make a re-run of N, which
// starts from state N-1, commit the same sessions at most once. State N is
// a delta of what batch N changed (the sessions it created, those it
// changed in place with only the pages it added, those it emitted or merged
// away, and the edits it held back or released), so a batch's save costs
// what the batch changed, not the size of the state; every MaxDeltaChain
// versions, and whenever the deltas since outgrow the open sessions, it is
// a full snapshot instead. State N is rebuilt from the last full snapshot
// at or before N and the deltas after it. Each file carries a CRC32: a
// damaged file, or a delta whose predecessor is missing, is
// ErrCorruptState and stops the query instead of silently dropping open
// sessions. State files of earlier builds (JSON, and the binary formats
// with titles, before and after held edits) still load, also as the start
// of a delta chain the new build continues.
//
// Limitation: if the checkpoint directory is lost, the query continues from
// the table's marker with no open sessions (logged at error level): edits
// of sessions that were open at the loss are not in any emitted session,
// and sessions spanning the loss are cut there. Silver itself stays exact.
package sessions
