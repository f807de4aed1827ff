package metatest

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// RefCounter is the optional capability of an API to report block
// reference counts and releases (*meta.Service has it; the RPC client does
// not). The model checks them when the API under test has it.
type RefCounter interface {
	BlockRefs(ctx context.Context, h block.Hash) (uint64, error)
	Releases(ctx context.Context, after meta.Release, before int64, limit int) ([]meta.Release, bool, error)
	CheckRefs(ctx context.Context) ([]meta.RefMismatch, error)
}

// checkRefs compares the reference counts with the model's recipes (every
// live or orphaned regular file's entries), and checks that every block
// once named and named no more has a release, and that no block never
// named has one. ever collects the blocks named so far.
func (m *model) checkRefs(h *harness, ever map[block.Hash]bool) string {
	rc, ok := h.api.(RefCounter)
	if !ok {
		return ""
	}
	want := map[block.Hash]uint64{}
	for _, n := range m.nodes {
		if n.gone || !n.isReg() {
			continue
		}
		for _, hs := range n.blocks {
			want[hs]++
			ever[hs] = true
		}
	}
	var msgs []string
	for _, hs := range slices.SortedFunc(maps.Keys(ever), func(a, b block.Hash) int { return strings.Compare(string(a[:]), string(b[:])) }) {
		got, err := rc.BlockRefs(h.ctx, hs)
		if err != nil || got != want[hs] {
			msgs = append(msgs, fmt.Sprintf("block %s: %d references, %v; want %d", hs.Short(), got, err, want[hs]))
		}
	}
	released := map[block.Hash]bool{}
	for after := (meta.Release{}); ; {
		rs, more, err := rc.Releases(h.ctx, after, math.MaxInt64, 7)
		if err != nil {
			return fmt.Sprintf("releases: %v", err)
		}
		for _, r := range rs {
			released[r.Hash] = true
			if r.Refs != want[r.Hash] {
				msgs = append(msgs, fmt.Sprintf("release of %s says %d references, want %d", r.Hash.Short(), r.Refs, want[r.Hash]))
			}
			if !ever[r.Hash] {
				msgs = append(msgs, fmt.Sprintf("release of %s, a block no recipe named", r.Hash.Short()))
			}
			after = r
		}
		if !more {
			break
		}
	}
	for hs := range ever {
		if want[hs] == 0 && !released[hs] {
			msgs = append(msgs, fmt.Sprintf("block %s is named by no recipe and has no release", hs.Short()))
		}
	}
	if bad, err := rc.CheckRefs(h.ctx); err != nil || len(bad) > 0 {
		msgs = append(msgs, fmt.Sprintf("CheckRefs: %v %v", bad, err))
	}
	return strings.Join(msgs, "; ")
}
