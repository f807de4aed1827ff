package placement

import (
	"fmt"
	"slices"
	"testing"
)

func flat(id string) Domain { return Domain{Host: id} }

func TestOptionsFlat(t *testing.T) {
	cands := []string{"a", "b", "c"}
	got := Options(cands, flat, 2)
	want := [][]string{{"a", "b"}, {"a", "c"}, {"b", "c"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("Options r=2 = %v, want %v", got, want)
	}
	if got := Options([]string{"a", "b"}, flat, 2); len(got) != 1 || !slices.Equal(got[0], []string{"a", "b"}) {
		t.Fatalf("Options with r candidates = %v, want only [a b]", got)
	}
	if got := Options([]string{"a"}, flat, 2); len(got) != 1 || !slices.Equal(got[0], []string{"a"}) {
		t.Fatalf("Options with fewer than r candidates = %v, want only [a]", got)
	}
	if got := Options(cands, flat, 0); got != nil {
		t.Fatalf("Options r=0 = %v, want none", got)
	}
}

// An option must spread over as many domains as the plain placement: with
// two hosts, the two copies may not share one.
func TestOptionsKeepDomainSpread(t *testing.T) {
	host := map[string]string{"a1": "h1", "b2": "h2", "c1": "h1", "d2": "h2"}
	dom := func(id string) Domain { return Domain{Host: host[id]} }
	ranked := []string{"a1", "c1", "b2", "d2"}
	cands := Candidates(ranked, dom, 2)
	if !slices.Equal(cands, []string{"a1", "b2", "c1"}) {
		t.Fatalf("Candidates = %v, want [a1 b2 c1] (spread first)", cands)
	}
	got := Options(cands, dom, 2)
	want := [][]string{{"a1", "b2"}, {"b2", "c1"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("Options = %v, want %v (never a1+c1 on one host)", got, want)
	}
	// Leaving out b2 (the only copy on h2) is not allowed however loaded it is.
	got1 := Choose(cands, dom, 2, func(id string) int64 {
		if id == "b2" {
			return 100
		}
		return 0
	}, 0)
	if !slices.Equal(got1, []string{"a1", "b2"}) {
		t.Fatalf("Choose with b2 loaded = %v, want [a1 b2]", got1)
	}
	got2 := Choose(cands, dom, 2, func(id string) int64 {
		if id == "a1" {
			return 100
		}
		return 0
	}, 0)
	if !slices.Equal(got2, []string{"b2", "c1"}) {
		t.Fatalf("Choose with a1 loaded = %v, want [b2 c1]", got2)
	}
}

func TestChoose(t *testing.T) {
	cands := []string{"a", "b", "c"}
	zero := func(string) int64 { return 0 }
	if got := Choose(cands, flat, 2, zero, 0); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Choose with equal costs, tie 0 = %v, want the plain placement [a b]", got)
	}
	if got := Choose(cands, flat, 2, zero, 2); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("Choose with equal costs, tie 2 = %v, want the third option [b c]", got)
	}
	for _, tc := range []struct {
		busy string
		want []string
	}{{"a", []string{"b", "c"}}, {"b", []string{"a", "c"}}, {"c", []string{"a", "b"}}} {
		got := Choose(cands, flat, 2, func(id string) int64 {
			if id == tc.busy {
				return 1 << 20
			}
			return 1
		}, 7)
		if !slices.Equal(got, tc.want) {
			t.Fatalf("Choose with %s busiest = %v, want %v", tc.busy, got, tc.want)
		}
	}
	if got := Choose([]string{"a"}, flat, 1, zero, 1); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Choose with one server = %v", got)
	}
	if got := Choose(nil, flat, 1, zero, 1); len(got) != 0 {
		t.Fatalf("Choose with no server = %v", got)
	}
}

// TestChooseEvensOutOneFile places the 256 blocks of a 1 GiB file (4 MiB
// blocks) over 8 servers, r = 1, as a writer does: cost = bytes it has sent
// to each server. Plain rendezvous is binomial (the busiest server holds
// ~20 % over the mean); with the choice between two ranks the busiest is
// within a block or two of the mean, and every block is on a candidate.
func TestChooseEvensOutOneFile(t *testing.T) {
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = fmt.Sprintf("b%d", i)
	}
	set := NewSet(ids)
	for seed := range uint64(20) {
		plain := map[string]int64{}
		chosen := map[string]int64{}
		for _, h := range hashes(256, seed+100) {
			ranked := set.Ranked(h)
			plain[ranked[0]]++
			cands := Candidates(ranked, flat, 1)
			got := Choose(cands, flat, 1, func(id string) int64 { return chosen[id] }, TieKey(h))
			if len(got) != 1 || !slices.Contains(cands[:2], got[0]) {
				t.Fatalf("Choose = %v, not one of the first two ranks %v", got, cands)
			}
			chosen[got[0]]++
		}
		maxOf := func(m map[string]int64) int64 {
			var x int64
			for _, v := range m {
				x = max(x, v)
			}
			return x
		}
		if mx := maxOf(chosen); mx > 32+2 {
			t.Fatalf("seed %d: busiest server holds %d blocks with the choice, mean 32 (plain: %d)", seed, mx, maxOf(plain))
		}
		if seed == 0 {
			t.Logf("busiest of 8 servers, 256 blocks: plain %d, with choice %d (mean 32)", maxOf(plain), maxOf(chosen))
		}
	}
}

// With equal costs the tie key spreads blocks evenly over the options.
func TestChooseTiesSpread(t *testing.T) {
	cands := []string{"a", "b", "c"}
	n := map[string]int{}
	for _, h := range hashes(3000, 7) {
		n[LeftOut(cands, Choose(cands, flat, 2, func(string) int64 { return 0 }, TieKey(h)))]++
	}
	for _, id := range cands {
		if n[id] < 900 || n[id] > 1100 {
			t.Fatalf("left out with equal costs: %v; want about 1000 each", n)
		}
	}
}
