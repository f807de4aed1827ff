package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeFlag is a flag of bytes that takes a binary suffix: 512, 64K, 10M,
// 1G, 2T (K = 1024; "KiB", "KB" and lower case read the same). set
// records whether the command line gave it.
type sizeFlag struct {
	n   uint64
	set bool
}

func (s *sizeFlag) String() string {
	if s == nil {
		return "0"
	}
	return strconv.FormatUint(s.n, 10)
}

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	s.n, s.set = n, true
	return nil
}

// parseSize reads a byte count with an optional binary suffix.
func parseSize(v string) (uint64, error) {
	num := strings.TrimSpace(v)
	upper := strings.ToUpper(num)
	for _, tail := range []string{"IB", "B"} {
		if strings.HasSuffix(upper, tail) && len(upper) > len(tail) {
			upper = upper[:len(upper)-len(tail)]
			break
		}
	}
	shift := 0
	if len(upper) > 0 {
		if i := strings.IndexByte("KMGTPE", upper[len(upper)-1]); i >= 0 {
			shift = 10 * (i + 1)
			upper = upper[:len(upper)-1]
		}
	}
	n, err := strconv.ParseUint(upper, 10, 64)
	if err != nil || upper == "" {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with K, M, G, T, P or E (powers of 1024)", clip(v, 32))
	}
	if shift > 0 && n > math.MaxUint64>>shift {
		return 0, fmt.Errorf("size %q: too large", clip(v, 32))
	}
	return n << shift, nil
}

// clip cuts s to n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
