// Package bridge is the hub of the protocol bridge: the normalized model of a
// conversation turn (Request, Message, Event), the run engine that drives an
// upstream call and commits every event to a durable log before any client
// sees it, and the store interfaces that log is written through.
//
// Dialect packages translate to and from these types; nothing here knows a
// wire format. The engine sees tracing only through the OpenTelemetry trace
// API handed to it in Config.
//
// # The run
//
// A run is one turn, from the user's input to its final event, however many
// model calls and tool calls it takes. Its events have seqs 1, 2, ... in the
// order the engine assigned them; an event id (EventID) is "<run>:<seq>".
// Start records the run and its input, and returns once they are committed;
// Subscribe replays a run's committed events after a seq and then follows the
// live ones; Abort cancels it; Steer adds user input to it; Resume picks up,
// after a restart, a run whose upstream can be resumed.
//
// The engine's files, by concern: engine.go (Config, New, the registry of
// live runs, Close), start.go (Start: the session, what of a request is
// new, the run it continues; the run context and launch Start and Resume
// share), pump.go (a run's upstream calls, its events queued, its end),
// live.go (a live run's state, the writer and its batches), steer.go
// (Steer), read.go (Subscribe, Run, Abort), follow.go (following a run
// another process drives), history.go (History and the partial turn),
// resume.go (Resume after a restart), trace.go (the run's span).
//
// # Goroutines, and who owns what
//
//   - The writer (one per Engine, started by New, stopped by Close) is the
//     only goroutine that commits to the Store during a run. It takes
//     whatever is queued on Engine.queue (up to MaxBatch pendings, or up to
//     a run's first visible event, which ends the batch), commits it in one
//     Store.Commit, then for each run in the batch appends the committed
//     events to the run's window (liveRun.blocks: its newest LiveEvents
//     events, and up to LiveLag times as many while a follower in it has
//     yet to read them) and wakes that run's followers (publish). Nothing reaches a subscriber before the commit returned.
//     It also notes when a run's first content was committed and seals the
//     run's timings into the row that ends it; a timing learnt later
//     (timing.go) joins its next batch, or is committed alone when it is
//     idle.
//   - The pump (one per running run, started by Start or Resume) opens the
//     upstream call, decodes its events and emits them: emit assigns the
//     next seq and queues the event for the writer. The pump owns the
//     upstream call, the assembler that folds a step's events into the
//     assistant message, and liveRun.contentSeen and storeRun. It makes one
//     more model call when a steer arrived while the model was answering,
//     and ends the run with finish, which queues the final event with the
//     run's row and transcript messages and waits for their commit.
//   - Subscribers (one per client stream, in the caller's goroutine) read
//     a live run's window a block at a time: a block is only ever appended
//     to, and dropped whole, so they read it without a copy and hold at
//     most one; each publishes the seq it yielded last (an atomic), which
//     the writer reads when it trims the window. A subscriber behind the window, and any reader of a
//     finished run, reads the Store a page at a time (everything the
//     window dropped is committed). Each read goes on from the seq last
//     yielded, so the seams between store and window have no gap and no
//     duplicate. History folds a running run's turn from the Store too.
//   - Session channels (one per subscribed client, in its request's
//     goroutine) read the session's committed events in commit order
//     (SessionEvents: the store numbers each commit's events per session,
//     Event.SessionSeq) a page at a time, taking WatchSession's channel
//     before each read. The writer closes a session's watch channel after
//     each commit of its events (and Start once a run's creation is
//     committed); the channel carries no events, so a channel that falls
//     behind holds no memory of the engine's: it reads the store. Over a
//     store other processes share (SessionWatcher), their commits in the
//     session reach its channels through the store's listener goroutine,
//     as feeds (FollowSession) of the events their notifications carried
//     (up to FeedKeep a channel), which a channel takes while they follow
//     on from its position, and reads the store otherwise.
//   - Callers of Steer and Abort run in their request's goroutine. A steer is
//     queued like an event (a user_message, with the run's next seq) and
//     acknowledged once committed; Abort cancels the run's context (and the
//     upstream's own cancel, when the Call has one) and waits for the final
//     event to be committed.
//   - The circuit breaker (outbound/) starts no goroutine: it admits a call
//     in the pump's goroutine and counts the call's outcome when the pump's
//     range over its events ends (or its context does).
//
// # Locks, and their order
//
// Engine.mu guards the registry of live runs (live), parked steers,
// session watches and closing; it is held only for map operations, never while another lock is
// taken. liveRun.emitMu orders seq assignment with queueing, so the writer
// receives a run's events in seq order whoever emits them (the pump or a
// steer); liveRun.mu guards the run's snapshot, its window, the
// steer queue and the current call. The order is emitMu, then mu: code that
// holds emitMu may take mu (finish updates the run's row while it queues the
// final event), never the reverse. Sending on Engine.queue happens under
// emitMu and may block when the queue is full: that slows the runs that
// produce events, never drops one, and the writer takes no run lock before
// it has received, so it cannot deadlock with a blocked sender.
//
// # What may block
//
// Start blocks until the new run's creation is committed (one transaction);
// Steer until its user_message is committed; Abort until the final event is;
// Close until every pump has ended (or its context is done, after which the
// runs are cancelled) and the writer has committed everything queued. The
// writer blocks only in Store.Commit. A subscriber blocks waiting for the
// next commit of its run, or its context.
package bridge
