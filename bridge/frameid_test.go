package bridge

import "testing"

func TestParseFrameID(t *testing.T) {
	tests := []struct {
		id    string
		run   string
		seq   int64
		frame int
		ok    bool
	}{
		{"run_1:7", "run_1", 7, 0, true},
		{"run_1:7.1", "run_1", 7, 1, true},
		{"run_1:7.12", "run_1", 7, 12, true},
		{"a:b:3.2", "a:b", 3, 2, true},
		{"run_1:0", "run_1", 0, 0, true},
		{"run_1:7.0", "", 0, 0, false},
		{"run_1:7.", "", 0, 0, false},
		{"run_1:.1", "", 0, 0, false},
		{"run_1:7.1.2", "", 0, 0, false},
		{"run_1:-7", "", 0, 0, false},
		{"run_1:+7", "", 0, 0, false},
		{"run_1:7.-1", "", 0, 0, false},
		{"run_1:", "", 0, 0, false},
		{":7", "", 0, 0, false},
		{"7", "", 0, 0, false},
		{"run_1:99999999999999999999", "", 0, 0, false},
	}
	for _, tt := range tests {
		run, seq, frame, ok := ParseFrameID(tt.id)
		if run != tt.run || seq != tt.seq || frame != tt.frame || ok != tt.ok {
			t.Errorf("ParseFrameID(%q) = %q, %d, %d, %v; want %q, %d, %d, %v", tt.id, run, seq, frame, ok, tt.run, tt.seq, tt.frame, tt.ok)
		}
		// ParseEventID reads the EventID form only.
		r, s, ok := ParseEventID(tt.id)
		if wantOK := tt.ok && tt.frame == 0; ok != wantOK || ok && (r != tt.run || s != tt.seq) {
			t.Errorf("ParseEventID(%q) = %q, %d, %v", tt.id, r, s, ok)
		}
	}
	if got := FrameID("run_1", 7, 2); got != "run_1:7.2" {
		t.Errorf("FrameID = %q", got)
	}
	if run, seq, frame, ok := ParseFrameID(FrameID("r", 3, 4)); !ok || run != "r" || seq != 3 || frame != 4 {
		t.Errorf("FrameID does not parse back")
	}
}
