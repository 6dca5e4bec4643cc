package wire

import "github.com/bridge-dev/bridge/bridge"

// Outcome is what an accumulator (a non-streaming answer built from a
// run's events) keeps of the run's usage, its first error event and its
// final.
type Outcome struct {
	Usage bridge.Usage
	Err   *bridge.Error // the first error event's
	Final *bridge.Final
}

// Add folds in a usage, error or final event; other kinds are not its.
func (o *Outcome) Add(ev *bridge.Event) {
	switch ev.Kind {
	case bridge.KindUsage:
		o.Usage.Merge(ev.Usage)
	case bridge.KindError:
		if o.Err == nil {
			o.Err = ErrorOf(ev.Error)
		}
	case bridge.KindFinal:
		o.Final = FinalOf(ev.Final)
		o.Usage.Merge(o.Final.Usage)
	}
}

// AnswerError is the error the answer renders instead of its body: the
// error event's when the run ended without a final (an internal error
// without one either); when its final did not succeed, the final's
// (finalError: FinalError with the dialect's cancel code), but the error
// event's for a failure the final does not describe. It is nil for a run
// that succeeded.
func (o *Outcome) AnswerError(finalError func(*bridge.Final, *bridge.Error) *bridge.Error) error {
	if o.Final == nil {
		if o.Err != nil {
			return o.Err
		}
		return bridge.Errorf(bridge.CodeInternal, "run ended without a final event")
	}
	if err := finalError(o.Final, nil); err != nil {
		if o.Final.Status == bridge.StatusFailed && o.Final.Error == nil && o.Err != nil {
			return o.Err
		}
		return err
	}
	return nil
}
