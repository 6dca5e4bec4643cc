package bridgetest

import (
	"context"
	"sync"

	"github.com/bridge-dev/bridge/bridge"
)

// Resumable is a scripted upstream that also resumes runs (a
// bridge.Resumer): each Resume records what it was given, then fails with
// ResumeErr or yields ResumeEvents (each waiting on Gate when it is set).
type Resumable struct {
	Upstream
	ResumeEvents []bridge.Event
	ResumeErr    error
	// ResumeErrs fail the first calls of Resume, one each, before
	// ResumeErr or ResumeEvents answer the rest.
	ResumeErrs []error

	rmu     sync.Mutex
	resumes []Resumed
}

// Resumed is what one Resume was given.
type Resumed struct {
	Request *bridge.Request
	Run     bridge.Run
	Events  []bridge.Event
}

var _ bridge.Resumer = (*Resumable)(nil)

// Resumes returns what each Resume was given.
func (u *Resumable) Resumes() []Resumed {
	u.rmu.Lock()
	defer u.rmu.Unlock()
	return append([]Resumed(nil), u.resumes...)
}

// Resume implements bridge.Resumer.
func (u *Resumable) Resume(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
	r := Resumed{Run: *run, Events: append([]bridge.Event(nil), events...)}
	if req != nil {
		c := *req
		r.Request = &c
	}
	u.rmu.Lock()
	u.resumes = append(u.resumes, r)
	n := len(u.resumes)
	u.rmu.Unlock()
	if n <= len(u.ResumeErrs) {
		return nil, u.ResumeErrs[n-1]
	}
	if u.ResumeErr != nil {
		return nil, u.ResumeErr
	}
	evs := u.ResumeEvents
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) {
		for _, ev := range evs {
			if u.Gate != nil {
				select {
				case <-u.Gate:
				case <-ctx.Done():
					yield(bridge.Event{}, context.Cause(ctx))
					return
				}
			}
			if !yield(ev, nil) {
				return
			}
		}
	}}, nil
}
