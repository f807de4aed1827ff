package placement

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrBadSpec marks a replication spec that does not parse.
var ErrBadSpec = errors.New("bad replication spec")

// MaxCopies bounds the copies a spec may ask for in all (the inode record
// keeps the total in one byte; meta.MaxReplicas is the same bound).
const MaxCopies = 9

// Spec is a replication spec: N copies anywhere (spread over sites, racks
// and hosts), or, with Sites, so many copies in each named site.
type Spec struct {
	// N is the number of copies in all; 0 means the cluster's default
	// (a zero Spec).
	N int
	// Sites, when set, names the copies per site, sorted by site name;
	// N is then their sum.
	Sites []SiteCopies
}

// SiteCopies is the number of copies a spec asks of one site.
type SiteCopies struct {
	Site string
	N    int
}

// Copies returns a spec of n copies anywhere.
func Copies(n int) Spec { return Spec{N: n} }

// ParseSpec parses a replication spec: a number of copies ("3"), or copies
// per named site ("siteA:1,siteB:1,siteC:1"). Site names are what servers
// give as --site: letters, digits, '-', '_' and '.'. The error names the
// part that is wrong and matches ErrBadSpec.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{}, fmt.Errorf("%w: empty", ErrBadSpec)
	}
	if !strings.Contains(s, ":") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxCopies {
			return Spec{}, fmt.Errorf("%w %q: want a number of copies from 1 to %d, or site:copies,... (e.g. a:1,b:1,c:1)", ErrBadSpec, s, MaxCopies)
		}
		return Copies(n), nil
	}
	var sp Spec
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		site, count, ok := strings.Cut(part, ":")
		if !ok {
			return Spec{}, fmt.Errorf("%w %q: part %q: want site:copies", ErrBadSpec, s, part)
		}
		if err := CheckSite(site); err != nil {
			return Spec{}, fmt.Errorf("%w %q: part %q: %w", ErrBadSpec, s, part, err)
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > MaxCopies {
			return Spec{}, fmt.Errorf("%w %q: part %q: copies %q: want a number from 1 to %d", ErrBadSpec, s, part, count, MaxCopies)
		}
		if slices.ContainsFunc(sp.Sites, func(c SiteCopies) bool { return c.Site == site }) {
			return Spec{}, fmt.Errorf("%w %q: site %q named twice", ErrBadSpec, s, site)
		}
		sp.Sites = append(sp.Sites, SiteCopies{site, n})
		sp.N += n
	}
	if sp.N > MaxCopies {
		return Spec{}, fmt.Errorf("%w %q: %d copies in all, max %d", ErrBadSpec, s, sp.N, MaxCopies)
	}
	slices.SortFunc(sp.Sites, func(a, b SiteCopies) int { return strings.Compare(a.Site, b.Site) })
	return sp, nil
}

// CheckSite checks a site name (of a server, a mount or a spec): 1 to 64
// letters, digits, '-', '_' or '.'.
func CheckSite(site string) error {
	if site == "" || len(site) > 64 {
		return fmt.Errorf("site name %q: want 1 to 64 characters", site)
	}
	for _, c := range site {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("site name %q: character %q (want letters, digits, '-', '_', '.')", site, c)
		}
	}
	return nil
}

// String returns the spec in the form ParseSpec reads ("3", "a:1,b:2");
// "" for the zero Spec.
func (s Spec) String() string {
	if len(s.Sites) == 0 {
		if s.N == 0 {
			return ""
		}
		return strconv.Itoa(s.N)
	}
	parts := make([]string, len(s.Sites))
	for i, c := range s.Sites {
		parts[i] = c.Site + ":" + strconv.Itoa(c.N)
	}
	return strings.Join(parts, ",")
}

// IsZero reports whether s is the zero Spec (the cluster's default).
func (s Spec) IsZero() bool { return s.N == 0 && len(s.Sites) == 0 }

// Merge returns the spec that satisfies both a and b, for a block that
// files of both specs refer to: per-site copies take the larger count of
// each site; a number against a number takes the larger; a site spec wins
// over a number (it names where the copies go, and keeps at least as many
// copies as its sites ask for).
func Merge(a, b Spec) Spec {
	switch {
	case len(a.Sites) == 0 && len(b.Sites) == 0:
		return Copies(max(a.N, b.N))
	case len(b.Sites) == 0:
		return a
	case len(a.Sites) == 0:
		return b
	}
	var out Spec
	for _, c := range a.Sites {
		out.Sites = append(out.Sites, c)
	}
	for _, c := range b.Sites {
		if i := slices.IndexFunc(out.Sites, func(o SiteCopies) bool { return o.Site == c.Site }); i >= 0 {
			out.Sites[i].N = max(out.Sites[i].N, c.N)
		} else {
			out.Sites = append(out.Sites, c)
		}
	}
	slices.SortFunc(out.Sites, func(x, y SiteCopies) int { return strings.Compare(x.Site, y.Site) })
	for _, c := range out.Sites {
		out.N += c.N
	}
	return out
}

// Group is one part of a spec's placement: K copies among the servers of
// one site (Site), or anywhere (a number spec: Site "" and Any).
type Group struct {
	Site string
	Any  bool
	K    int
}

// Groups returns the parts of the spec's placement: one Any group of N
// copies for a number, one group per named site otherwise.
func (s Spec) Groups() []Group {
	if len(s.Sites) == 0 {
		return []Group{{Any: true, K: s.N}}
	}
	out := make([]Group, len(s.Sites))
	for i, c := range s.Sites {
		out[i] = Group{Site: c.Site, K: c.N}
	}
	return out
}

// Need returns how many of a group's K copies must be durable for the group
// to count as holding the block: a majority.
func (g Group) Need() int { return g.K/2 + 1 }

// InGroup returns the ids of ranked that belong to group g (all of them for
// an Any group), in ranked order.
func InGroup(ranked []string, domain func(id string) Domain, g Group) []string {
	if g.Any {
		return ranked
	}
	out := make([]string, 0, len(ranked))
	for _, id := range ranked {
		if domain(id).Site == g.Site {
			out = append(out, id)
		}
	}
	return out
}
