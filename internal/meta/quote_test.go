package meta

import (
	"strings"
	"testing"
)

func TestQuoteBoundsLongStrings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a", `"a"`},
		{"a\x00b", `"a\x00b"`},
		{strings.Repeat("x", QuoteMax), `"` + strings.Repeat("x", QuoteMax) + `"`},
		{strings.Repeat("x", 15<<20), `"` + strings.Repeat("x", QuoteMax) + `"…(15728640 bytes)`},
		// A cut inside a character moves back to its start.
		{strings.Repeat("x", QuoteMax-1) + "é" + "yy", `"` + strings.Repeat("x", QuoteMax-1) + `"…(67 bytes)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%d bytes) = %.200s, want %.200s", len(tc.in), got, tc.want)
		}
	}
	// Control bytes, four characters each under %q, stay bounded.
	if got := Quote(strings.Repeat("\x01", 1<<20)); len(got) > 4*QuoteMax+32 {
		t.Errorf("Quote of 1 MiB of control bytes: %d bytes", len(got))
	}
}
