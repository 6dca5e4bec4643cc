package inbound

import (
	"net/http/httptest"
	"testing"
)

func TestParseCursor(t *testing.T) {
	tests := []struct {
		c    string
		want Cursor
		ok   bool
	}{
		{"", Cursor{}, true},
		{"7", Cursor{Seq: 7}, true},
		{"run_a:7", Cursor{Seq: 7}, true},
		{"run_a:7.2", Cursor{Seq: 7, Frame: 2}, true},
		{"run_b:7", Cursor{}, false},
		{"run_a:7.0", Cursor{}, false},
		{"run_a:x", Cursor{}, false},
		{"-1", Cursor{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseCursor("run_a", tt.c)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v, %v", tt.c, got, ok, tt.want, tt.ok)
		}
		if ok && tt.c != "" && tt.c != "7" && got.ID("run_a") != tt.c {
			t.Errorf("ID = %q, want %q", got.ID("run_a"), tt.c)
		}
	}
}

// TestSkipFrames: the frames up to and including the cursor's are dropped,
// in whatever Writes they come; id-less frames go once the cursor is passed.
func TestSkipFrames(t *testing.T) {
	frames := []string{
		"id: r:1\ndata: a\n\n",
		": ping\n\n",
		"id: r:2.1\ndata: b\n\n",
		"event: x\nid: r:2.2\ndata: c\n\n",
		"id: r:2\ndata: d\n\n",
		"id: r:4\ndata: e\n\n",
		"data: [DONE]\n\n",
	}
	all := ""
	for _, f := range frames {
		all += f
	}
	tests := []struct {
		cur  Cursor
		want string
	}{
		{Cursor{Seq: 1}, all[len(frames[0]):]},
		{Cursor{Seq: 2, Frame: 1}, frames[3] + frames[4] + frames[5] + frames[6]},
		{Cursor{Seq: 2, Frame: 2}, frames[4] + frames[5] + frames[6]},
		{Cursor{Seq: 2}, frames[5] + frames[6]},
		{Cursor{Seq: 3}, frames[5] + frames[6]}, // an event with no frame: after all of it
		{Cursor{Seq: 4}, frames[6]},
		{Cursor{Seq: 9}, ""},
	}
	for _, tt := range tests {
		for _, split := range []bool{false, true} {
			w := httptest.NewRecorder()
			sw := SkipFrames(w, tt.cur)
			if split {
				for _, f := range frames { // one frame a Write, the last in two halves
					if f == frames[6] {
						sw.Write([]byte(f[:5]))
						sw.Write([]byte(f[5:]))
						continue
					}
					sw.Write([]byte(f))
				}
			} else {
				sw.Write([]byte(all))
			}
			if got := w.Body.String(); got != tt.want {
				t.Errorf("cursor %+v (split %v): got %q, want %q", tt.cur, split, got, tt.want)
			}
		}
	}
	if w := httptest.NewRecorder(); SkipFrames(w, Cursor{}) != w {
		t.Error("SkipFrames with the zero cursor wraps")
	}
}
