package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/server"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

const runsUsage = `usage:
  bridge runs list [--db F] [--session S] [--status X] [--limit N] [--json]
  bridge runs show RUN [--db F] [--json]

list prints the newest runs first; show prints one run's timeline: its
dialects, model, upstream ids, each event with its offset in ms from the
run's start, tool calls, usage, outcome and trace id. Message contents are
not printed (text is counted in characters, arguments in bytes).
`

// runsCmd is `bridge runs`: it reads the SQLite file directly (a running
// bridge may have it open; WAL lets both read).
func runsCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, runsUsage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "list":
		return runsList(args[1:], stdout, stderr)
	case "show":
		return runsShow(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, runsUsage)
		return nil
	}
	fmt.Fprint(stderr, runsUsage)
	return fmt.Errorf("runs: unknown command %q", args[0])
}

// openStore opens an existing database file; it never creates one.
func openRunsStore(ctx context.Context, path string) (*sqlite.Store, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s (give --db)", path)
		}
		return nil, err
	}
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

// parseInterspersed parses flags that may come before or after the
// positional arguments (bridge runs show RUN --json).
func parseRunsFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func runsList(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runs list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", server.DefaultConfig().DB, "the bridge's SQLite file")
	session := fs.String("session", "", "only the runs of this session")
	status := fs.String("status", "", "only runs in this status (running, completed, failed, cancelled, interrupted, input_required)")
	limit := fs.Int("limit", 50, "at most this many runs")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseRunsFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("runs list: unexpected arguments %v", pos)
	}
	switch bridge.Status(*status) {
	case "", bridge.StatusRunning, bridge.StatusCompleted, bridge.StatusFailed, bridge.StatusCancelled,
		bridge.StatusInterrupted, bridge.StatusInputRequired:
	default:
		return fmt.Errorf("runs list: unknown status %q", *status)
	}
	ctx := context.Background()
	store, err := openRunsStore(ctx, *db)
	if err != nil {
		return err
	}
	defer store.Close()
	list, err := store.ListRuns(ctx, bridge.RunFilter{SessionID: *session, Status: bridge.Status(*status), Limit: max(*limit, 1)})
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []*bridge.Run{}
		}
		return tlWriteJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSESSION\tSTATUS\tDIALECTS\tMODEL\tCREATED\tDURATION\tTOKENS\tTRACE")
	for _, r := range list {
		dur := "-"
		if !r.Finished.IsZero() {
			dur = tlFmtDur(r.Finished.Sub(r.Created))
		}
		tokens := "-"
		if !r.Usage.IsZero() {
			tokens = fmt.Sprint(r.Usage.Total())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s -> %s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.SessionID, r.Status, tlDash(r.Inbound), tlDash(r.Outbound),
			tlDash(r.Model), r.Created.UTC().Format(tlTimeLayout), dur, tokens, tlDash(r.TraceID))
	}
	return tw.Flush()
}

func runsShow(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runs show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", server.DefaultConfig().DB, "the bridge's SQLite file")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseRunsFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("runs show: want one run id")
	}
	ctx := context.Background()
	store, err := openRunsStore(ctx, *db)
	if err != nil {
		return err
	}
	defer store.Close()
	run, err := store.Run(ctx, pos[0])
	if err != nil {
		return err
	}
	evs, err := store.Events(ctx, run.ID, 0, 0)
	if err != nil {
		return err
	}
	tl := buildRunTimeline(ctx, store, run, evs)
	if *asJSON {
		return tlWriteJSON(stdout, tl)
	}
	tl.print(stdout)
	return nil
}

// timeline is a run as `runs show` prints it; its JSON is what --json
// prints.
type runTimeline struct {
	Run        *bridge.Run   `json:"run"`
	DurationMS *float64      `json:"duration_ms,omitempty"`
	TTFTMS     *float64      `json:"ttft_ms,omitempty"`
	Upstream   tlUpstreamIDs `json:"upstream_ids"`
	Events     []tlEvent     `json:"events"`
	ToolCalls  []tlToolCall  `json:"tool_calls"`
	Final      *bridge.Final `json:"final,omitempty"`
	// EventsDeleted says the retention janitor has removed the events.
	EventsDeleted bool `json:"events_deleted,omitempty"`
}

// upstreamIDs are the ids the upstream gave the run.
type tlUpstreamIDs struct {
	Run       string   `json:"run,omitempty"`
	Responses []string `json:"responses,omitempty"`
	// Events counts the events that carry an upstream event id; First and
	// Last are the first and last of those ids.
	Events     int    `json:"events,omitempty"`
	FirstEvent string `json:"first_event,omitempty"`
	LastEvent  string `json:"last_event,omitempty"`
}

// timelineEvent is one event without its contents.
type tlEvent struct {
	Seq        int64         `json:"seq"`
	OffsetMS   float64       `json:"offset_ms"`
	Kind       bridge.Kind   `json:"kind"`
	Source     bridge.Source `json:"source,omitempty"`
	Index      int           `json:"index,omitempty"`
	Chars      int           `json:"chars,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	ToolName   string        `json:"tool_name,omitempty"`
	ResponseID string        `json:"response_id,omitempty"`
	Model      string        `json:"model,omitempty"`
	UpstreamID string        `json:"upstream_id,omitempty"`
	Usage      *bridge.Usage `json:"usage,omitempty"`
	Error      *bridge.Error `json:"error,omitempty"`
	Final      *bridge.Final `json:"final,omitempty"`
	Role       bridge.Role   `json:"role,omitempty"` // a steer's message
	ArgBytes   int           `json:"argument_bytes,omitempty"`
	Result     *tlResult     `json:"result,omitempty"`
}

// resultSummary is a tool result without its content.
type tlResult struct {
	CallID  string `json:"call_id"`
	IsError bool   `json:"is_error,omitempty"`
	Parts   int    `json:"parts"`
}

// toolCall is one tool call the run recorded.
type tlToolCall struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	OffsetMS float64 `json:"offset_ms"`
	ArgBytes int     `json:"argument_bytes"`
	// RemoteID is the id the upstream knows the call by, when it differs.
	RemoteID string `json:"remote_id,omitempty"`
	Result   string `json:"result,omitempty"` // "ok" or "error" when the stream carried one
}

func buildRunTimeline(ctx context.Context, store *sqlite.Store, run *bridge.Run, evs []bridge.Event) *runTimeline {
	tl := &runTimeline{Run: run, Events: []tlEvent{}, ToolCalls: []tlToolCall{}, Upstream: tlUpstreamIDs{Run: run.UpstreamRunID}}
	tl.EventsDeleted = len(evs) == 0 && run.LastSeq > 0
	if !run.Finished.IsZero() {
		d := tlMS(run.Finished.Sub(run.Created))
		tl.DurationMS = &d
	}
	calls := map[string]int{}
	for _, ev := range evs {
		te := tlEvent{Seq: ev.Seq, OffsetMS: tlMS(ev.Time.Sub(run.Created)), Kind: ev.Kind, Source: ev.Source, Index: ev.Index,
			Chars: len([]rune(ev.Text)), ResponseID: ev.ResponseID, Model: ev.Model, UpstreamID: ev.UpstreamID,
			Usage: ev.Usage, Error: ev.Error, Final: ev.Final}
		switch ev.Kind {
		case bridge.KindTextDelta, bridge.KindReasoningDelta, bridge.KindToolCallStarted:
			if tl.TTFTMS == nil {
				v := te.OffsetMS
				tl.TTFTMS = &v
			}
		case bridge.KindFinal:
			tl.Final = ev.Final
		case bridge.KindToolResult:
			if r := ev.ToolResult; r != nil {
				te.Result = &tlResult{CallID: r.CallID, IsError: r.IsError, Parts: len(r.Content)}
				if i, ok := calls[r.CallID]; ok {
					tl.ToolCalls[i].Result = map[bool]string{false: "ok", true: "error"}[r.IsError]
				}
			}
		}
		if ev.Message != nil {
			te.Role = ev.Message.Role
			te.Chars = len([]rune(ev.Message.Text()))
		}
		if c := ev.ToolCall; c != nil {
			te.ToolCallID, te.ToolName, te.ArgBytes = c.ID, c.Name, len(c.Arguments)
			if ev.Kind == bridge.KindToolCallDone {
				tc := tlToolCall{ID: c.ID, Name: c.Name, OffsetMS: te.OffsetMS, ArgBytes: len(c.Arguments)}
				if remote, err := store.RemoteID(ctx, bridge.IDToolCall, run.Upstream, c.ID); err == nil && remote != c.ID {
					tc.RemoteID = remote
				}
				calls[c.ID] = len(tl.ToolCalls)
				tl.ToolCalls = append(tl.ToolCalls, tc)
			}
		}
		if ev.ResponseID != "" && !slices.Contains(tl.Upstream.Responses, ev.ResponseID) {
			tl.Upstream.Responses = append(tl.Upstream.Responses, ev.ResponseID)
		}
		if ev.UpstreamID != "" {
			if tl.Upstream.Events == 0 {
				tl.Upstream.FirstEvent = ev.UpstreamID
			}
			tl.Upstream.Events++
			tl.Upstream.LastEvent = ev.UpstreamID
		}
		tl.Events = append(tl.Events, te)
	}
	return tl
}

// print writes the human timeline. Runs of deltas of one kind and index
// are folded into one line.
func (tl *runTimeline) print(w io.Writer) {
	r := tl.Run
	p := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-10s %s\n", label, fmt.Sprintf(format, args...))
	}
	p("run", "%s", r.ID)
	p("session", "%s", r.SessionID)
	if r.Principal != "" {
		p("principal", "%s", r.Principal)
	}
	outcome := string(r.Status)
	if r.StopReason != "" {
		outcome += " (" + string(r.StopReason) + ")"
	}
	if r.Reason != "" {
		outcome += ": " + r.Reason
	}
	if tl.Final != nil && tl.Final.Error != nil {
		outcome += " [" + string(tl.Final.Error.Code) + "]"
	}
	p("outcome", "%s", outcome)
	p("dialects", "%s -> %s (upstream %s)", tlDash(r.Inbound), tlDash(r.Outbound), tlDash(r.Upstream))
	models := map[string]bool{}
	var answered []string
	for _, e := range tl.Events {
		if e.Model != "" && !models[e.Model] {
			models[e.Model] = true
			answered = append(answered, e.Model)
		}
	}
	if len(answered) > 0 && (len(answered) > 1 || answered[0] != r.Model) {
		p("model", "%s (answered by %s)", tlDash(r.Model), strings.Join(answered, ", "))
	} else {
		p("model", "%s", tlDash(r.Model))
	}
	p("created", "%s", r.Created.UTC().Format(tlTimeLayout))
	if tl.DurationMS != nil {
		p("finished", "%s (%s ms)", r.Finished.UTC().Format(tlTimeLayout), tlFmtMS(*tl.DurationMS))
	}
	if tl.TTFTMS != nil {
		p("ttft", "%s ms", tlFmtMS(*tl.TTFTMS))
	}
	p("trace", "%s", tlDash(r.TraceID))
	var ids []string
	if tl.Upstream.Run != "" {
		ids = append(ids, "run "+tl.Upstream.Run)
	}
	for _, id := range tl.Upstream.Responses {
		if id != tl.Upstream.Run {
			ids = append(ids, "response "+id)
		}
	}
	if tl.Upstream.Events > 0 {
		ids = append(ids, fmt.Sprintf("%d events %s..%s", tl.Upstream.Events, tl.Upstream.FirstEvent, tl.Upstream.LastEvent))
	}
	p("upstream", "%s", tlDash(strings.Join(ids, ", ")))
	p("usage", "%s", tlUsage(&r.Usage))
	if len(r.Dropped) > 0 {
		p("dropped", "%s", strings.Join(r.Dropped, ", "))
	}

	fmt.Fprintf(w, "\ntimeline (ms from the run's start)\n")
	if tl.EventsDeleted {
		fmt.Fprintf(w, "  the events were deleted by the retention janitor (last seq %d)\n", r.LastSeq)
	}
	for i := 0; i < len(tl.Events); {
		e := tl.Events[i]
		j := i + 1
		if tlFoldable(e.Kind) {
			for j < len(tl.Events) && tl.Events[j].Kind == e.Kind && tl.Events[j].Index == e.Index {
				j++
			}
		}
		kind, seq, detail := string(e.Kind), fmt.Sprintf("#%d", e.Seq), tlDetail(&e)
		if n := j - i; n > 1 {
			last := tl.Events[j-1]
			size := 0
			for _, f := range tl.Events[i:j] {
				size += f.Chars + f.ArgBytes
			}
			kind = fmt.Sprintf("%s x%d", e.Kind, n)
			seq = fmt.Sprintf("#%d-%d", e.Seq, last.Seq)
			unit := "chars"
			if e.Kind == bridge.KindToolCallDelta {
				unit = "bytes"
			}
			detail = fmt.Sprintf("%d %s, to +%s", size, unit, tlFmtMS(last.OffsetMS))
			if e.Kind == bridge.KindToolCallDelta || e.Index != 0 {
				detail = fmt.Sprintf("index %d, %s", e.Index, detail)
			}
		}
		line := fmt.Sprintf("%10s  %-9s %-20s %-7s %s", "+"+tlFmtMS(e.OffsetMS), seq, kind, e.Source, detail)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
		i = j
	}

	fmt.Fprintf(w, "\ntool calls\n")
	if len(tl.ToolCalls) == 0 {
		fmt.Fprintln(w, "  -")
	}
	for _, c := range tl.ToolCalls {
		line := fmt.Sprintf("  %-24s %-20s at +%s ms, %d bytes of arguments", c.ID, c.Name, tlFmtMS(c.OffsetMS), c.ArgBytes)
		if c.RemoteID != "" {
			line += ", upstream id " + c.RemoteID
		}
		if c.Result != "" {
			line += ", result " + c.Result
		}
		fmt.Fprintln(w, line)
	}
}

func tlFoldable(k bridge.Kind) bool {
	return k == bridge.KindTextDelta || k == bridge.KindReasoningDelta || k == bridge.KindToolCallDelta
}

// eventDetail describes one event without its contents.
func tlDetail(e *tlEvent) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch e.Kind {
	case bridge.KindTextDelta, bridge.KindReasoningDelta:
		add("%d chars", e.Chars)
	case bridge.KindToolCallStarted, bridge.KindToolCallDone:
		add("%s %s", tlDash(e.ToolCallID), tlDash(e.ToolName))
		if e.Kind == bridge.KindToolCallDone {
			add("%d bytes of arguments", e.ArgBytes)
		}
	case bridge.KindToolCallDelta:
		add("index %d, %d bytes", e.Index, e.ArgBytes)
	case bridge.KindToolResult:
		if e.Result != nil {
			res := "ok"
			if e.Result.IsError {
				res = "error"
			}
			add("%s %s, %d parts", e.Result.CallID, res, e.Result.Parts)
		}
	case bridge.KindUsage:
		add("%s", tlUsage(e.Usage))
	case bridge.KindError:
		if e.Error != nil {
			add("%s: %s", e.Error.Code, e.Error.Message)
		}
	case bridge.KindFinal:
		if f := e.Final; f != nil {
			s := string(f.Status)
			if f.StopReason != "" {
				s += " " + string(f.StopReason)
			}
			if f.Error != nil {
				s += " [" + string(f.Error.Code) + "]"
			}
			add("%s", s)
		}
	case bridge.KindUserMessage:
		add("%s, %d chars", tlDash(string(e.Role)), e.Chars)
	}
	if e.ResponseID != "" {
		add("response %s", e.ResponseID)
	}
	if e.Model != "" {
		add("model %s", e.Model)
	}
	if e.UpstreamID != "" {
		add("upstream id %s", e.UpstreamID)
	}
	return strings.Join(parts, ", ")
}

func tlUsage(u *bridge.Usage) string {
	if u.IsZero() {
		return "-"
	}
	var parts []string
	add := func(name string, v *int64) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s %d", name, *v))
		}
	}
	add("input", u.InputTokens)
	add("output", u.OutputTokens)
	add("reasoning", u.ReasoningTokens)
	add("cache read", u.CacheReadTokens)
	add("cache write", u.CacheWriteTokens)
	add("total", u.TotalTokens)
	return strings.Join(parts, ", ")
}

const tlTimeLayout = "2006-01-02T15:04:05.000Z"

// tlMS is d in milliseconds, to the microsecond.
func tlMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func tlFmtMS(v float64) string        { return fmt.Sprintf("%.1f", v) }
func tlFmtDur(d time.Duration) string { return tlFmtMS(tlMS(d)) + "ms" }

func tlDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tlWriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
