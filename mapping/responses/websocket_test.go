package responses

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// frameData splits an SSE body into the data of its frames, as WebSocket
// mode sends them (one message a frame; no [DONE]).
func frameData(sse []byte) [][]byte {
	var out [][]byte
	for frame := range bytes.SplitSeq(sse, []byte("\n\n")) {
		var data []byte
		for line := range bytes.SplitSeq(frame, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			}
		}
		if len(data) > 0 && string(data) != "[DONE]" {
			out = append(out, data)
		}
	}
	return out
}

// TestDecodeMessages: each golden upstream stream, sent as WebSocket
// messages, decodes to the events DecodeStream makes of it, and no message
// after the terminal event is read.
func TestDecodeMessages(t *testing.T) {
	files, _ := filepath.Glob("testdata/stream_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden streams")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := golden.Read(t, path)
			up, ok := a.File("upstream.sse")
			if !ok {
				t.Fatal("no upstream.sse")
			}
			want, wantErr := golden.Collect(t, DecodeStream(bytes.NewReader(up)))
			msgs := frameData(up)
			if wantErr == nil {
				// A message after the last one: the next response's, which
				// must stay unread.
				msgs = append(msgs, []byte(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_next"}}`))
			}
			n := 0
			next := func() ([]byte, error) {
				if n == len(msgs) {
					return nil, io.EOF
				}
				n++
				return msgs[n-1], nil
			}
			got, gotErr := golden.Collect(t, DecodeMessages(next))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-DecodeStream +DecodeMessages):\n%s", diff)
			}
			if bridge.ErrorCode(wantErr) != bridge.ErrorCode(gotErr) {
				t.Errorf("error %v, want %v", gotErr, wantErr)
			}
			if wantErr == nil && n == len(msgs) {
				t.Errorf("the decoder read the message after the terminal event")
			}
		})
	}
}

// TestEncodeRequestWebSocket: WebSocket mode's body is a response.create
// message without stream.
func TestEncodeRequestWebSocket(t *testing.T) {
	req := &bridge.Request{Model: "gpt-test", Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}}}
	b, _, err := EncodeRequest(req, EncodeOptions{WebSocket: true, PreviousResponseID: "resp_1", From: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(`{"type":"response.create","model":"gpt-test",`)) || bytes.Contains(b, []byte(`"stream"`)) ||
		!bytes.Contains(b, []byte(`"previous_response_id":"resp_1"`)) {
		t.Errorf("WebSocket body: %s", b)
	}
	h, _, _ := EncodeRequest(req, EncodeOptions{})
	if !bytes.HasPrefix(h, []byte(`{"model":`)) || !bytes.Contains(h, []byte(`"stream":true`)) {
		t.Errorf("HTTP body: %s", h)
	}
}
