package client

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"tessera/internal/block"
)

func TestSpansMerge(t *testing.T) {
	var s spans
	s.wrote(10, 20)
	s.wrote(30, 40)
	s.wrote(20, 25) // touches [10,20): merged
	s.add(50, 60)   // a cut: does not move end
	s.wrote(35, 55) // bridges [30,40) and [50,60)
	if got := fmt.Sprint(s.iv); got != "[{10 25} {30 60}]" || s.end != 55 || s.all {
		t.Fatalf("spans %s end %d all %v; want [{10 25} {30 60}] end 55", got, s.end, s.all)
	}
	c := s.clone()
	c.wrote(0, 100)
	if len(s.iv) != 2 || len(c.iv) != 1 {
		t.Fatalf("clone shares memory: %v %v", s.iv, c.iv)
	}
}

// TestSpansOverflow: past maxSpans ranges the block counts as written whole
// (never as its hull with stale gaps).
func TestSpansOverflow(t *testing.T) {
	var s spans
	for i := range maxSpans {
		s.wrote(int64(10*i), int64(10*i+5))
	}
	if s.all || len(s.iv) != maxSpans {
		t.Fatalf("%d ranges, all=%v; want %d kept", len(s.iv), s.all, maxSpans)
	}
	past := int64(10*maxSpans + 100) // beyond every range so far
	s.wrote(past, past+1)
	if !s.all || s.iv != nil || s.end != past+1 {
		t.Fatalf("after %d ranges: all=%v iv=%d end=%d; want the whole block", maxSpans+1, s.all, len(s.iv), s.end)
	}
	base := bytes.Repeat([]byte{'b'}, int(2*past))
	ours := bytes.Repeat([]byte{'o'}, int(past+50))
	s.overlay(base, ours)
	if !bytes.Equal(base[:past+50], ours) || !block.AllZero(base[past+50:]) {
		t.Fatalf("a whole-block overlay is not this client's block (zeros past its end)")
	}
}

// TestSpansOverlay checks overlay against a byte-by-byte model.
func TestSpansOverlay(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		var s spans
		written := make([]bool, 4096)
		for range 1 + rng.Intn(20) {
			lo := rng.Int63n(4096)
			hi := min(4096, lo+1+rng.Int63n(300))
			s.wrote(lo, hi)
			for i := lo; i < hi; i++ {
				written[i] = true
			}
		}
		ours := make([]byte, rng.Intn(4096))
		rng.Read(ours)
		base := make([]byte, 1+rng.Intn(4096))
		rng.Read(base)
		want := bytes.Clone(base)
		for i := range want {
			if written[i] && !s.all {
				want[i] = 0
				if i < len(ours) {
					want[i] = ours[i]
				}
			}
		}
		s.overlay(base, ours)
		if !s.all && !bytes.Equal(base, want) {
			t.Fatalf("round %d: overlay differs from the model at %d", round, firstDiff(base, want))
		}
	}
}
