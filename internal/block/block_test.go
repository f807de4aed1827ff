package block

import (
	"strings"
	"testing"
)

func TestSumKnownAnswer(t *testing.T) {
	// BLAKE3 of the empty input, from the BLAKE3 test vectors.
	const empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := Sum(nil).String(); got != empty {
		t.Fatalf("Sum(nil) = %s, want %s", got, empty)
	}
}

func TestHashStrings(t *testing.T) {
	h := Sum([]byte("tessera"))
	got, err := ParseHash(h.String())
	if err != nil || got != h {
		t.Fatalf("ParseHash(String()) = %v, %v; want %v", got, err, h)
	}
	if len(h.Short()) != 12 || !strings.HasPrefix(h.String(), h.Short()) {
		t.Fatalf("Short = %q, not a 12-digit prefix of %s", h.Short(), h)
	}
	if h.IsZero() || !(Hash{}).IsZero() {
		t.Fatalf("IsZero wrong")
	}
	for _, bad := range []string{"", "ab", strings.Repeat("g", 64), strings.Repeat("a", 63), strings.Repeat("a", 65)} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q): no error", bad)
		}
	}
}

// FuzzParseHash: ParseHash accepts exactly the 64-digit hex strings (either
// case), and what it accepts prints back as the lower-case input.
func FuzzParseHash(f *testing.F) {
	f.Add(Sum(nil).String())
	f.Add(strings.ToUpper(Sum(nil).String()))
	f.Add("zz")
	f.Add(strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHash(s)
		valid := len(s) == 64 && strings.Trim(s, "0123456789abcdefABCDEF") == ""
		if (err == nil) != valid {
			t.Fatalf("ParseHash(%q): error %v, but valid = %v", s, err, valid)
		}
		if err == nil && h.String() != strings.ToLower(s) {
			t.Fatalf("ParseHash(%q).String() = %s", s, h)
		}
	})
}
