package bridge

// HistoryPage is one page of a session's history: transcript messages
// oldest first, and the runs they belong to. Cursor, when HasMore, fetches
// the page of older messages before this one.
type HistoryPage struct {
	Session  *Session  `json:"session"`
	Messages []Message `json:"messages"`
	Runs     []*Run    `json:"runs"`
	Cursor   string    `json:"cursor,omitempty"`
	HasMore  bool      `json:"has_more"`
}
