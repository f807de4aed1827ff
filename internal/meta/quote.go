package meta

import (
	"strconv"
	"unicode/utf8"
)

// QuoteMax is how many bytes of a caller's string Quote shows.
const QuoteMax = 64

// Quote returns s quoted for an error or a log line, bounded whatever a
// caller sent: strings of at most QuoteMax bytes as %q shows them, longer
// ones as their first QuoteMax bytes (cut at a character boundary), quoted,
// followed by "…(N bytes)". A name a peer sends is checked after it is
// decoded, so the error refusing it must not echo it whole.
func Quote(s string) string {
	if len(s) <= QuoteMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(cutAt(s, QuoteMax)) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// MaxCause bounds the text of a write-back failure a gateway reports (and
// the error kept with the write-back record); the meta port refuses longer.
const MaxCause = 4096

// Clip returns s cut to at most n bytes at a character boundary, with
// "…" in place of what was cut: for a text of unbounded length (an error
// from a home store) sent where a bound holds.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutAt(s, n-len("…")) + "…"
}

// cutAt returns the longest prefix of s of at most n bytes that ends at a
// character boundary (at most utf8.UTFMax-1 bytes shorter than n).
func cutAt(s string, n int) string {
	cut := max(n, 0)
	for cut > n-utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
