package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/responses"
)

// Compaction: POST /v1/responses/compact passes the conversation to the
// routed upstream's own compaction when it has one (a Responses upstream's
// /responses/compact; Config.Compact), else asks the routed model for a
// summary of the conversation it is given (its input, after the
// conversation of previous_response_id when set) as a run like any other,
// in a session of its own (the summary is no turn of the conversation), and
// answers a response.compaction object whose output is one compaction
// item. The item's encrypted_content is a reference to that run, not the
// summary: when the item comes back as input to a later request, the
// bridge expands it into the summary (its principal's runs only).

// compactionRef prefixes the encrypted_content of the bridge's compaction
// items; the run id follows.
const compactionRef = "bridge-compaction:v1:"

// compactPrompt is the instruction the summary is asked with.
const compactPrompt = "Summarize the conversation above so that it can be continued from the summary alone: " +
	"the user's goals, the facts and decisions so far, and what remains to do. Answer with the summary only."

func (h *Handler) compact(w http.ResponseWriter, r *http.Request) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		h.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "request body: invalid JSON"))
		return
	}
	var model string
	if json.Unmarshal(fields["model"], &model) != nil || model == "" {
		h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "model", Message: "model: required"})
		return
	}
	ctx := r.Context()
	principal := bridge.PrincipalFromContext(ctx)
	// The conversation: the input given, after a previous response's.
	req := map[string]json.RawMessage{"model": fields["model"], "input": fields["input"], "store": json.RawMessage("false")}
	if v, ok := fields["instructions"]; ok {
		req["instructions"] = v
	}
	var prevID string
	if v, ok := fields["previous_response_id"]; ok && json.Unmarshal(v, &prevID) != nil {
		h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "previous_response_id", Message: "previous_response_id: must be a string"})
		return
	}
	if len(req["input"]) == 0 || string(req["input"]) == "null" {
		req["input"] = json.RawMessage(`[]`)
	}
	rb, _ := json.Marshal(req)
	if rb, err = h.expandCompactions(ctx, rb); err != nil {
		h.WriteError(w, err)
		return
	}
	cr, err := wire.DecodeRequest(rb)
	if err != nil && bridge.ErrorCode(err) == bridge.CodeInvalid && strings.Contains(err.Error(), "input") {
		// An empty input is allowed here: the prompt is the input.
		cr, err = wire.DecodeRequest(appendPrompt(rb))
	} else if err == nil {
		cr.Hub.Messages = append(cr.Hub.Messages, bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(compactPrompt)}})
	}
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if prevID != "" {
		// The summary run is a session of its own, holding the
		// conversation so far: it is no turn of that conversation.
		prev, err := h.previous(ctx, principal, prevID, nil)
		if err != nil {
			h.WriteError(w, err)
			return
		}
		msgs, err := h.transcript(ctx, prev)
		if err != nil {
			h.WriteError(w, err)
			return
		}
		cr.Hub.Messages = append(msgs, cr.Hub.Messages...)
	}
	if h.cfg.Compact != nil {
		// An upstream with compaction of its own makes it: its object
		// goes back as it came, and its compaction item, back in a later
		// input, goes to it whole.
		conv := *cr.Hub
		conv.Messages = cr.Hub.Messages[:len(cr.Hub.Messages)-1] // without the summary prompt
		obj, ok, err := h.cfg.Compact(ctx, &conv)
		if err != nil {
			h.WriteError(w, err)
			return
		}
		if ok {
			h.writeJSON(w, http.StatusOK, obj)
			return
		}
	}
	rec := &record{ID: bridge.NewID("resp_"), Principal: principal, Created: h.cfg.Now().UTC(), Model: model}
	cr.Hub.Stream = false
	cr.Hub.Render, _ = json.Marshal(render{Response: rec.ID})
	run, err := h.start(ctx, principal, cr, rec, "", nil)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	rec.RunID, rec.After = run.ID, run.LastSeq
	_, events, err := h.cfg.Engine.Subscribe(ctx, run.ID, run.LastSeq)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	acc := wire.NewAccumulator(streamOptions(rec))
	var text strings.Builder
	var usage *bridge.Usage
	for ev, err := range events {
		if err != nil {
			h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
			return
		}
		acc.Add(&ev)
		if ev.Kind == bridge.KindTextDelta {
			text.WriteString(ev.Text)
		}
		if ev.Final != nil && ev.Final.Usage != nil {
			usage = ev.Final.Usage
		}
		if acc.Finished() {
			break
		}
	}
	if err := acc.Err(); err != nil && acc.Status() == "failed" {
		h.WriteError(w, err)
		return
	}
	if strings.TrimSpace(text.String()) == "" {
		h.WriteError(w, bridge.Errorf(bridge.CodeUpstream, "the model gave no summary"))
		return
	}
	w.Header().Set(HeaderRunID, run.ID)
	w.Header().Set(HeaderSessionID, run.SessionID)
	h.writeJSON(w, http.StatusOK, compactionObject(rec, run.ID, usage))
}

// appendPrompt adds the summary prompt as the input of a request body with
// none.
func appendPrompt(b []byte) []byte {
	var v map[string]json.RawMessage
	_ = json.Unmarshal(b, &v)
	v["input"], _ = json.Marshal(compactPrompt)
	out, _ := json.Marshal(v)
	return out
}

// compactionObject is the response.compaction object.
func compactionObject(rec *record, run string, u *bridge.Usage) []byte {
	core := strings.TrimPrefix(rec.ID, "resp_")
	b := []byte(`{"id":`)
	b = strconv.AppendQuote(b, rec.ID)
	b = append(b, `,"object":"response.compaction","created_at":`...)
	b = strconv.AppendInt(b, rec.Created.Unix(), 10)
	b = append(b, `,"output":[{"id":"cmp_`...)
	b = append(b, core...)
	b = append(b, `","type":"compaction","encrypted_content":`...)
	b = strconv.AppendQuote(b, compactionRef+run)
	b = append(b, `}],"usage":`...)
	var in, out, reasoning int64
	if u != nil {
		in, out, reasoning = deref(u.InputTokens), deref(u.OutputTokens), deref(u.ReasoningTokens)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, in, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	b = strconv.AppendInt(b, out, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, reasoning, 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, in+out, 10)
	return append(b, `}}`...)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// expandCompactions replaces each compaction item of a request body's input
// whose content is the bridge's reference by a message holding the summary
// it refers to. A reference to no run of the caller's is a 400.
func (h *Handler) expandCompactions(ctx context.Context, body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte(compactionRef)) {
		return body, nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return body, nil // the decoder says what is wrong
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v["input"], &items); err != nil {
		return body, nil
	}
	for i, it := range items {
		var c struct {
			Type    string `json:"type"`
			Content string `json:"encrypted_content"`
		}
		if json.Unmarshal(it, &c) != nil || c.Type != "compaction" || !strings.HasPrefix(c.Content, compactionRef) {
			continue
		}
		summary, err := h.summary(ctx, strings.TrimPrefix(c.Content, compactionRef))
		if err != nil {
			return nil, &bridge.Error{Code: bridge.CodeInvalid, Param: "input[" + strconv.Itoa(i) + "].encrypted_content",
				Message: "input[" + strconv.Itoa(i) + "]: this compaction item refers to no compaction of this bridge's"}
		}
		msg := map[string]any{"type": "message", "role": "user",
			"content": "Summary of the conversation so far (compacted):\n" + summary}
		items[i], _ = json.Marshal(msg)
	}
	v["input"], _ = json.Marshal(items)
	return json.Marshal(v)
}

// summary is the text of the last assistant message of run, the caller's.
func (h *Handler) summary(ctx context.Context, run string) (string, error) {
	msgs, err := h.cfg.Engine.RunMessages(ctx, run)
	if err != nil {
		return "", err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == bridge.RoleAssistant {
			if t := msgs[i].Text(); t != "" {
				return t, nil
			}
		}
	}
	return "", bridge.Errorf(bridge.CodeNotFound, "no summary in run %s", run)
}
