package anthropic

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestToolIDs(t *testing.T) {
	for _, c := range []struct{ local, shown string }{
		{"toolu_01A09q90qw90lq917835lq9", "toolu_01A09q90qw90lq917835lq9"},
		{"call_abc-1", "call_abc-1"},
		{"call.1:x", "toolu_x_Y2FsbC4xOng"},
		{" ", "toolu_x_IA"},
		{"", "toolu_x_"},
		{"toolu_x_abc", "toolu_x_dG9vbHVfeF9hYmM"}, // the prefix itself is escaped
		{"é", "toolu_x_w6k"},
	} {
		shown := WireToolID(c.local)
		if shown != c.shown || !ValidToolID(shown) && c.local != "" {
			t.Errorf("WireToolID(%q) = %q, want %q", c.local, shown, c.shown)
		}
		if back := LocalToolID(shown); back != c.local {
			t.Errorf("LocalToolID(%q) = %q, want %q", shown, back, c.local)
		}
	}
	// A client's own id that looks like an escape but is not one is kept.
	for _, id := range []string{"toolu_x_!", "toolu_x_a", "toolu_1", "toolu_x_abcd"} { // abcd decodes to "i\xb7\x1d"
		if got := LocalToolID(id); got != id {
			t.Errorf("LocalToolID(%q) = %q", id, got)
		}
	}
}

// FuzzToolIDs: every id a client is shown matches Anthropic's pattern, and
// comes back as the id it was.
func FuzzToolIDs(f *testing.F) {
	for _, s := range []string{"toolu_1", "call.1", "toolu_x_", "toolu_x_IA", "\xff", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, local string) {
		if !utf8.ValidString(local) {
			return // ids come from JSON text: always UTF-8
		}
		shown := WireToolID(local)
		if !ValidToolID(shown) {
			t.Fatalf("WireToolID(%q) = %q does not match ^[a-zA-Z0-9_-]+$", local, shown)
		}
		if back := LocalToolID(shown); back != local {
			t.Fatalf("LocalToolID(WireToolID(%q)) = %q", local, back)
		}
		if ValidToolID(local) && !strings.HasPrefix(local, escapedToolID) && shown != local {
			t.Fatalf("a valid id %q was escaped to %q", local, shown)
		}
	})
}
