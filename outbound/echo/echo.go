// Package echo is the built-in scripted upstream: a model that streams the
// last user message back word by word, so a bridge with no account shows a
// working stream. It speaks the event model directly; no wire is involved.
package echo

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"time"
	"unicode"

	"github.com/bridge-dev/bridge/bridge"
)

// Dialect is the name of the echo upstream's dialect.
const Dialect = "echo"

// Upstream is the echo model. Delay paces the words (0: as fast as read).
type Upstream struct {
	Delay time.Duration
}

// Name implements bridge.Upstream.
func (u *Upstream) Name() string { return "echo" }

// Dialect implements bridge.Upstream.
func (u *Upstream) Dialect() string { return Dialect }

// Open implements bridge.Upstream: it answers with the text of the last user
// message, one text_delta per word (with the space before it), then usage
// counted in words, then a final with stop reason end_turn.
func (u *Upstream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	var text string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == bridge.RoleUser {
			text = req.Messages[i].Text()
			break
		}
	}
	model := req.Model
	if model == "" {
		model = "echo"
	}
	events := func(yield func(bridge.Event, error) bool) {
		if !yield(bridge.Event{Kind: bridge.KindMessageStarted, Model: model}, nil) {
			return
		}
		var t *time.Timer
		if u.Delay > 0 {
			t = time.NewTimer(u.Delay)
			defer t.Stop()
		}
		out := int64(0)
		for w := range Words(text) {
			out++
			if t != nil {
				select {
				case <-t.C:
					t.Reset(u.Delay)
				case <-ctx.Done():
					yield(bridge.Event{}, ctx.Err())
					return
				}
			} else if ctx.Err() != nil {
				yield(bridge.Event{}, ctx.Err())
				return
			}
			if !yield(bridge.Event{Kind: bridge.KindTextDelta, Text: w}, nil) {
				return
			}
		}
		if !yield(bridge.Event{Kind: bridge.KindMessageDone}, nil) {
			return
		}
		in := int64(0)
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if p.Type == bridge.PartText {
					in += count(Words(p.Text))
				}
			}
		}
		usage := &bridge.Usage{InputTokens: bridge.Int64(in), OutputTokens: bridge.Int64(out),
			TotalTokens: bridge.Int64(in + out)}
		if !yield(bridge.Event{Kind: bridge.KindUsage, Usage: usage}, nil) {
			return
		}
		yield(bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}}, nil)
	}
	var dropped []string
	if len(req.Tools) > 0 {
		dropped = append(dropped, "tools") // echo calls no tools
	}
	// Echo reads text alone: every media or unknown part is named, so a part the
	// client sent does not vanish unsaid (an unknown type by its own name).
	for i, m := range req.Messages {
		for j, p := range m.Parts {
			switch p.Type {
			case bridge.PartImage, bridge.PartAudio, bridge.PartFile, bridge.PartOpaque:
				dropped = append(dropped, fmt.Sprintf("messages[%d].content[%d]: %s part", i, j, partName(p)))
			}
		}
	}
	return &bridge.Call{Events: events, Dropped: dropped}, nil
}

// Split cuts s into words, each but the first keeping the whitespace before
// it, so the words concatenate back to s exactly.
func Split(s string) []string {
	var out []string
	for w := range Words(s) {
		out = append(out, w)
	}
	return out
}

// Words yields the words of s as Split cuts them, one at a time: an answer
// of millions of words holds none of them but the one being sent.
func Words(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := 0
		word := false // the last rune was part of a word
		for i, r := range s {
			sp := unicode.IsSpace(r)
			if sp && word && i > start {
				if !yield(s[start:i]) {
					return
				}
				start = i
			}
			word = !sp
		}
		if start < len(s) {
			yield(s[start:])
		}
	}
}

// count counts what seq yields.
func count(seq iter.Seq[string]) int64 {
	n := int64(0)
	for range seq {
		n++
	}
	return n
}

// partName names a part's type: an opaque part (a type the hub does not
// know) by the type its dialect gave it.
func partName(p bridge.Part) string {
	if p.Type != bridge.PartOpaque || p.Opaque == nil {
		return string(p.Type)
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(p.Opaque.Data, &o) == nil && o.Type != "" {
		return strconv.Quote(o.Type) + " (" + p.Opaque.Dialect + ")"
	}
	return "opaque " + p.Opaque.Dialect
}
