package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound/ui"
	"github.com/bridge-dev/bridge/server"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

const runsUsage = `usage:
  bridge runs list [--db F] [--session S] [--status X] [--inbound D] [--outbound D]
                   [--model M] [--since T] [--before RUN] [--limit N] [--json]
  bridge runs show RUN [--db F] [--json]

list prints the newest runs first (the inspector's list at /ui/, with the
same filters; --since takes RFC 3339 or a duration back from now, 1h); show prints one run's timeline: its
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
	inbound := fs.String("inbound", "", "only runs whose client spoke this dialect")
	outbound := fs.String("outbound", "", "only runs whose upstream spoke this dialect")
	model := fs.String("model", "", "only runs of this model")
	since := fs.String("since", "", "only runs created since this time (RFC 3339, or a duration back from now)")
	before := fs.String("before", "", "only runs older than this run (the next page)")
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
	f := bridge.RunFilter{SessionID: *session, Status: bridge.Status(*status), Inbound: *inbound, Outbound: *outbound, Model: *model,
		Before: *before, Limit: max(*limit, 1)}
	if *since != "" {
		if f.Since, err = ui.ParseSince(*since, time.Now()); err != nil {
			return fmt.Errorf("runs list: --since: %w", err)
		}
	}
	ctx := context.Background()
	store, err := openRunsStore(ctx, *db)
	if err != nil {
		return err
	}
	defer store.Close()
	list, err := store.ListRuns(ctx, f)
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
	tl := ui.BuildTimeline(ctx, store, run, evs)
	if *asJSON {
		return tlWriteJSON(stdout, tl)
	}
	printTimeline(stdout, tl)
	return nil
}

// The timeline is the inspector's (inbound/ui): both show the same data.
type (
	runTimeline = ui.Timeline
	tlEvent     = ui.TimelineEvent
	tlToolCall  = ui.ToolCall
)

// printTimeline writes the human timeline. Runs of deltas of one kind and index
// are folded into one line.
func printTimeline(w io.Writer, tl *runTimeline) {
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
	if tl.FirstCommitMS != nil {
		p("commit", "%s ms (its first content committed)", tlFmtMS(*tl.FirstCommitMS))
	}
	if tl.FirstClientByteMS != nil {
		p("client", "%s ms (the first byte written to its client)", tlFmtMS(*tl.FirstClientByteMS))
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
