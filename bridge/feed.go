package bridge

import "sync"

// Feed hands one reader the events of commits another process made, as a
// store that others share signals them (a notification that carried its
// events, or one that did not): the reader waits on Wake and takes what
// came with Take. Both a follower of a run (storage/postgres) and a
// session channel (FollowSession) read one.
type Feed struct {
	ch     chan struct{}
	mu     sync.Mutex
	evs    []Event
	read   bool // a signal came without its events, or more than are kept
	noKeep bool // the reader only wakes (NewFeed(false))
}

// FeedKeep bounds the events a feed keeps that its reader has not taken;
// past it, the reader reads the store.
const FeedKeep = 1024

// NewFeed returns an empty feed; one made with keep false keeps no events:
// its reader is only woken, and reads the store.
func NewFeed(keep bool) *Feed {
	return &Feed{ch: make(chan struct{}, 1), noKeep: !keep}
}

// Wake receives (coalesced) after each Signal. A nil feed's never does.
func (f *Feed) Wake() <-chan struct{} {
	if f == nil {
		return nil
	}
	return f.ch
}

// Take returns the events signalled since its last call, in commit order,
// and read = true when a signal since then came without its events (or
// more came than are kept): the store holds what the signals lacked.
func (f *Feed) Take() (evs []Event, read bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs, read = f.evs, f.read
	f.evs, f.read = nil, false
	return evs, read
}

// Signal hands the feed the events of a commit (nil: a signal without
// them) and wakes its reader.
func (f *Feed) Signal(evs []Event) {
	f.mu.Lock()
	switch {
	case f.noKeep, f.read: // its reader reads the store anyway
	case evs == nil || len(f.evs)+len(evs) > FeedKeep:
		f.evs, f.read = nil, true
	default:
		f.evs = append(f.evs, evs...)
	}
	f.mu.Unlock()
	select {
	case f.ch <- struct{}{}:
	default: // one pending signal is as good as many
	}
}
