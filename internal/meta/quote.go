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
	cut := QuoteMax
	for cut > QuoteMax-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
