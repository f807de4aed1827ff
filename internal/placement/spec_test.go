package placement

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"tessera/internal/block"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"3", "3"}, {" 1 ", "1"}, {"siteC:1,siteA:1,siteB:1", "siteA:1,siteB:1,siteC:1"},
		{"a:2, b:1", "a:2,b:1"}, {"eu-west.1:4", "eu-west.1:4"},
	} {
		sp, err := ParseSpec(c.in)
		if err != nil || sp.String() != c.want {
			t.Errorf("ParseSpec(%q) = %q, %v; want %q", c.in, sp.String(), err, c.want)
			continue
		}
		again, err := ParseSpec(sp.String())
		if err != nil || again.String() != c.want || again.N != sp.N {
			t.Errorf("reparse %q: %q, %v", c.want, again.String(), err)
		}
	}
	if sp, _ := ParseSpec("a:1,b:2,c:1"); sp.N != 4 || len(sp.Groups()) != 3 || sp.Groups()[1] != (Group{Site: "b", K: 2}) {
		t.Errorf("a:1,b:2,c:1: N %d groups %+v", sp.N, sp.Groups())
	}
	for _, c := range []struct{ in, names string }{
		{"", "empty"}, {"0", `"0"`}, {"10", `"10"`}, {"x", `"x"`},
		{"a:1,b:0", `part "b:0"`}, {"a:1,:1", `part ":1"`}, {"a:1,b", `part "b"`},
		{"a:1,a:1", `"a" named twice`}, {"a:3,b:3,c:4", "10 copies in all"},
		{"a/b:1", `character '/'`}, {"a:1,,b:1", `part ""`},
	} {
		_, err := ParseSpec(c.in)
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("ParseSpec(%q) = %v; want ErrBadSpec naming %s", c.in, err, c.names)
		}
	}
}

func TestMergeSpecs(t *testing.T) {
	p := func(s string) Spec {
		sp, err := ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	for _, c := range []struct{ a, b, want string }{
		{"2", "3", "3"}, {"a:1,b:1", "3", "a:1,b:1"}, {"2", "a:1", "a:1"},
		{"a:1,b:2", "b:1,c:1", "a:1,b:2,c:1"}, {"", "a:1", "a:1"},
	} {
		var a Spec
		if c.a != "" {
			a = p(c.a)
		}
		got := Merge(a, p(c.b))
		if got.String() != c.want {
			t.Errorf("Merge(%s, %s) = %s, want %s", c.a, c.b, got, c.want)
		}
		if n := sumSites(got); len(got.Sites) > 0 && n != got.N {
			t.Errorf("Merge(%s, %s): N %d, sites sum %d", c.a, c.b, got.N, n)
		}
	}
}

func sumSites(sp Spec) int {
	n := 0
	for _, c := range sp.Sites {
		n += c.N
	}
	return n
}

// InGroup over the global ranking is rendezvous hashing within the site:
// the same order as ranking the site's servers alone, so a site's
// placement does not change when servers of other sites come and go.
func TestInGroupIsRendezvousWithinSite(t *testing.T) {
	var all, siteB []string
	dom := map[string]Domain{}
	for s := range 3 {
		for i := range 4 {
			id := fmt.Sprintf("s%d-b%d", s, i)
			site := string(rune('A' + s))
			all = append(all, id)
			dom[id] = Domain{Site: site, Rack: fmt.Sprint(i % 2), Host: id}
			if site == "B" {
				siteB = append(siteB, id)
			}
		}
	}
	domain := func(id string) Domain { return dom[id] }
	g := Group{Site: "B", K: 2}
	for i := range 200 {
		h := block.Sum(fmt.Appendf(nil, "block %d", i))
		got := InGroup(NewSet(all).Ranked(h), domain, g)
		want := NewSet(siteB).Ranked(h)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("block %d: site B in the global ranking %v, ranked alone %v", i, got, want)
		}
		// The group's candidates spread over the site's racks.
		cands := Candidates(got, domain, g.K)
		if dom[cands[0]].Rack == dom[cands[1]].Rack {
			t.Fatalf("block %d: candidates %v share a rack", i, cands)
		}
	}
	if !(Group{Any: true, K: 3}).Any || (Group{K: 3}).Need() != 2 || (Group{K: 1}).Need() != 1 || (Group{K: 2}).Need() != 2 {
		t.Fatal("Need is not a majority of K")
	}
}
