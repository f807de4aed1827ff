package meta

import "fmt"

// BlockRange is a run of whole blocks [First, End) of a file, counted in
// the file's block size: the unit in which a gateway records what it has
// fetched of a partly cached file (GatewayInfo.Cached).
type BlockRange struct{ First, End uint64 }

// MaxCachedRanges is the most runs a gateway section records. It keeps
// the inode record small (16 bytes a run): a file read at more scattered
// places than this is fetched whole by its gateway instead.
const MaxCachedRanges = 256

// AddRange returns rs (sorted, disjoint, not touching) with r merged in.
// rs is not modified.
func AddRange(rs []BlockRange, r BlockRange) []BlockRange {
	if r.End <= r.First {
		return append([]BlockRange(nil), rs...)
	}
	out := make([]BlockRange, 0, len(rs)+1)
	i := 0
	for ; i < len(rs) && rs[i].End < r.First; i++ {
		out = append(out, rs[i])
	}
	for ; i < len(rs) && rs[i].First <= r.End; i++ {
		r.First, r.End = min(r.First, rs[i].First), max(r.End, rs[i].End)
	}
	out = append(out, r)
	return append(out, rs[i:]...)
}

// MissingRanges returns the runs of [first, end) that rs does not hold,
// in order.
func MissingRanges(rs []BlockRange, first, end uint64) []BlockRange {
	var out []BlockRange
	pos := first
	for _, r := range rs {
		if r.End <= pos {
			continue
		}
		if r.First >= end {
			break
		}
		if r.First > pos {
			out = append(out, BlockRange{pos, r.First})
		}
		pos = r.End
		if pos >= end {
			return out
		}
	}
	if pos < end {
		out = append(out, BlockRange{pos, end})
	}
	return out
}

// Holds reports whether the section says blocks [first, end) of its file
// are in the cache: all of them when the file is cached whole.
func (g *GatewayInfo) Holds(first, end uint64) bool {
	if g == nil || g.State == CacheCached || end <= first {
		return true
	}
	return len(MissingRanges(g.Cached, first, end)) == 0
}

// checkRanges reports what is wrong with a section's cached runs.
func checkRanges(g *GatewayInfo) error {
	if len(g.Cached) == 0 {
		return nil
	}
	if g.State != CachePartial {
		return fmt.Errorf("%d cached runs in state %v (only a partial file has them)", len(g.Cached), g.State)
	}
	if len(g.Cached) > MaxCachedRanges {
		return fmt.Errorf("%d cached runs, max %d", len(g.Cached), MaxCachedRanges)
	}
	for i, r := range g.Cached {
		if r.End <= r.First {
			return fmt.Errorf("cached run %d: empty [%d, %d)", i, r.First, r.End)
		}
		if i > 0 && r.First <= g.Cached[i-1].End {
			return fmt.Errorf("cached run %d: [%d, %d) is not after [%d, %d)", i, r.First, r.End, g.Cached[i-1].First, g.Cached[i-1].End)
		}
	}
	return nil
}
