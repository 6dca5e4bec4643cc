package wire

import "github.com/bridge-dev/bridge/bridge"

// StopReason is a final's stop reason in a dialect's words (reasons, which
// has a word for StopEndTurn and StopToolUse at least). A final without a
// reason is reasons[StopToolUse] when it waits for tool results, else
// reasons[StopEndTurn]; a reason the dialect has no word for is
// reasons[StopEndTurn] too, and dropped names it.
func StopReason(f *bridge.Final, reasons map[bridge.StopReason]string) (reason, dropped string) {
	switch r, ok := reasons[f.StopReason]; {
	case ok:
		return r, ""
	case f.StopReason == "" && f.Status == bridge.StatusInputRequired:
		return reasons[bridge.StopToolUse], ""
	case f.StopReason == "":
		return reasons[bridge.StopEndTurn], ""
	}
	return reasons[bridge.StopEndTurn], "stop_reason:" + string(f.StopReason)
}
