package hermes

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

func writeEvents(t *testing.T, evs []bridge.Event, serr error) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if serr != nil {
		b, _ := json.Marshal(bridge.AsError(serr))
		buf.WriteString("error: ")
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func decodeAll(r *bytes.Reader) ([]bridge.Event, error) {
	var evs []bridge.Event
	for ev, err := range DecodeStream(r) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// TestGoldenEncode encodes events.jsonl with options.json into want.sse,
// then decodes want.sse back and compares it with decoded.jsonl (what of
// the run a Hermes client's stream carries back to the hub).
func TestGoldenEncode(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		in, _ := a.File("events.jsonl")
		var opt StreamOptions
		if b, ok := a.File("options.json"); ok {
			if err := json.Unmarshal(b, &opt); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		enc := NewStreamEncoder(&out, opt)
		for _, ev := range golden.ParseEvents(t, in) {
			if err := enc.Encode(&ev); err != nil {
				t.Fatal(err)
			}
		}
		a.Check(t, "want.sse", out.Bytes())
		evs, err := decodeAll(bytes.NewReader(out.Bytes()))
		a.Check(t, "decoded.jsonl", writeEvents(t, evs, err))
		if d := enc.Dropped(); len(d) > 0 {
			a.CheckLines(t, "dropped.txt", d)
		}
	}, "encode_*.txtar")
}

// TestGoldenDecode decodes a Hermes server's stream (upstream.sse) into
// events.jsonl.
func TestGoldenDecode(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		in, _ := a.File("upstream.sse")
		if strings.Contains(a.Path, "crlf") {
			in = bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
		}
		evs, err := decodeAll(bytes.NewReader(in))
		a.Check(t, "events.jsonl", writeEvents(t, evs, err))
	}, "decode_*.txtar")
}

// TestEncoderResume: frames after a cursor are the same bytes as the tail
// of the whole stream, in a run continued after its client's tool results
// too.
func TestEncoderResume(t *testing.T) {
	for _, name := range []string{"encode_tool_loop", "encode_tool_continue"} {
		a := golden.Read(t, "testdata/"+name+".txtar")
		in, _ := a.File("events.jsonl")
		evs := golden.ParseEvents(t, in)
		var whole bytes.Buffer
		enc := NewStreamEncoder(&whole, StreamOptions{SessionID: "s-1", UserMessage: "weather?"})
		for _, ev := range evs {
			_ = enc.Encode(&ev)
		}
		frames := strings.SplitAfter(whole.String(), "\n\n")
		for after := 0; after <= int(enc.Seq()); after++ {
			var tail bytes.Buffer
			e2 := NewStreamEncoder(&tail, StreamOptions{SessionID: "s-1", UserMessage: "weather?", After: int64(after)})
			for _, ev := range evs {
				_ = e2.Encode(&ev)
			}
			if want := strings.Join(frames[after:], ""); tail.String() != want {
				t.Errorf("%s after %d: got\n%s\nwant\n%s", name, after, tail.String(), want)
			}
		}
	}
}
