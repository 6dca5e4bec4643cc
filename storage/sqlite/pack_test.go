package sqlite

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

// TestPlainText: only a model's text delta with nothing else set is packed
// as its bare text. Every other field of bridge.Event, set on its own,
// keeps the event's whole payload (a field added to Event later too, since
// this walks them all).
func TestPlainText(t *testing.T) {
	base := bridge.Event{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "hi"}
	if !plainText(&base) {
		t.Fatal("a plain text delta is not plain")
	}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		switch f.Name {
		case "RunID", "Seq", "Time", "SessionSeq", "Text": // columns of their own, and the text itself
			continue
		}
		ev := base
		fv := reflect.ValueOf(&ev).Elem().Field(i)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("x")
		case reflect.Int, reflect.Int64:
			fv.SetInt(1)
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Pointer:
			fv.Set(reflect.New(fv.Type().Elem()))
		case reflect.Slice:
			fv.Set(reflect.MakeSlice(fv.Type(), 1, 1))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", f.Name, fv.Kind())
		}
		if plainText(&ev) {
			t.Errorf("an event with %s set is packed as its text alone", f.Name)
		}
	}
}

// TestPackRows: deltas of every shape go into a pack row and come back as
// they were, times to the nanosecond (out of order and zero ones too), and
// from any cursor inside the pack; a pack row of the first format is still
// read.
func TestPackRows(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "bridge.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 12, 2, 18, 0, 0, 123456789, time.UTC)
	for _, id := range []string{"run_new", "run_old"} {
		if err := s.CreateRun(ctx, &bridge.Run{ID: id, Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := []bridge.Event{
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "Hel", Time: t0},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "lo \"q\" \u00e9\n", Time: t0.Add(1500 * time.Microsecond)},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "", Time: t0.Add(time.Millisecond)}, // earlier than the one before
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "x", Index: 1, Time: t0.Add(2 * time.Millisecond)},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "no", Refusal: true, Time: t0.Add(3 * time.Millisecond)},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceAgent, Text: "y", UpstreamID: "u7", Time: t0.Add(4 * time.Millisecond)},
		{Kind: bridge.KindReasoningDelta, Source: bridge.SourceModel, Text: "hmm", Signature: "sig", Time: t0.Add(5 * time.Millisecond)},
		{Kind: bridge.KindToolCallDelta, Source: bridge.SourceModel, Index: 2, ToolCall: &bridge.ToolCall{Index: 2, Arguments: `{"a":`}, Time: t0.Add(6 * time.Millisecond)},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "zero time"},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "end", Time: t0.Add(7 * time.Millisecond)},
	}
	batch := &bridge.Batch{}
	for i, ev := range want {
		ev.RunID, ev.Seq = "run_new", int64(i+1)
		batch.Events = append(batch.Events, ev)
	}
	if err := s.Commit(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var rows, kind string
	if err := s.r.QueryRowContext(ctx, `SELECT count(*), min(kind) FROM events WHERE run_id = 'run_new'`).Scan(&rows, &kind); err != nil || rows != "1" || kind != "pack" {
		t.Fatalf("%s rows of kind %s (%v), want one pack", rows, kind, err)
	}
	for after := range int64(len(want)) {
		got, err := s.Events(ctx, "run_new", after, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(batch.Events[after:], got); diff != "" {
			t.Fatalf("events after %d (-want +got):\n%s", after, diff)
		}
	}

	// The first format: an absolute time and a whole payload an event.
	var old []any
	for _, ev := range want[:3] {
		p := ev
		p.Time = time.Time{}
		b, _ := json.Marshal(&p)
		old = append(old, unixNano(ev.Time), json.RawMessage(b))
	}
	payload, _ := json.Marshal(old)
	if _, err := s.w.ExecContext(ctx, `INSERT INTO events (run_id, seq, kind, payload, upstream_id, time, last)
		VALUES ('run_old', 1, 'pack', CAST(? AS TEXT), '', ?, 3)`, payload, unixNano(t0)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Events(ctx, "run_old", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantOld := append([]bridge.Event(nil), want[1:3]...)
	for i := range wantOld {
		wantOld[i].RunID, wantOld[i].Seq = "run_old", int64(i+2)
	}
	if diff := cmp.Diff(wantOld, got); diff != "" {
		t.Errorf("a first-format pack (-want +got):\n%s", diff)
	}
}
