package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// Small writes upload what they wrote (meta's compose.go has the model).
//
// A block changed in a few small ranges since its committed version is not
// uploaded whole: the ranges are uploaded as patch blocks and the commit
// names the new content's hash with a composition — the committed block it
// was changed from plus the patches. A 64 KiB write into a 4 MiB block then
// sends 64 KiB, not 4 MiB, and rehashes only what changed (trees.go).
//
// A block is composed when all of these hold, and uploaded whole otherwise
// (which compacts an existing composition): its committed version is known
// from the recipe window this client read (so is whether that is composed,
// and of how many patches); it was not cut by a truncate; its changed
// ranges number at most maxPatchRuns and their bytes at most a quarter of a
// block and half of the block's length; appends did not just fill it to the
// block size (a sequential writer's block is stored whole when full, not
// composed and compacted); and the flattened composition stays within
// meta.MaxPatches and 1.5 blocks of patch bytes.
//
// Compositions are for blocks under churn. Once a composed block this
// client committed has not been changed for Config.CompactAfter (or one it
// assembled to read is that old: a writer may have died before it could),
// the client uploads it whole and tells the meta service (Decompose), which
// drops the composition and so releases the pieces: stored bytes come back
// to one block per block soon after the writes stop. A reader holding a
// composition whose pieces were reclaimed since falls back to the whole
// block.
//
// Readers learn compositions from the recipe (meta.Recipe.Composed), from
// conflicts (ConflictError.Current) and from this client's own uploads;
// getBlock assembles a composed block from its pieces and checks its hash.

// maxPatchRuns is the most changed ranges one composition takes.
const maxPatchRuns = 4

// maxCompEntries bounds the compositions a cache of them holds (the
// client's, and each open file's): with their patches (compCost) at most
// 64 KiB entries' worth, 4 MiB.
const maxCompEntries = 1 << 16

// compCost is what a composition counts against maxCompEntries: one for
// the entry and one for every four patches (a patch is 40 bytes, an entry
// with its map slot about 160). A bound of entries alone let a client hold
// 2^17 compositions of up to meta.MaxPatches patches: 500 MB.
func compCost(comp meta.Composition) int { return 1 + len(comp.Patches)/4 }

// compCacheBytes is about what maxCompEntries allows a cache to hold.
const compCacheBytes = maxCompEntries * 160

// compCache maps composed block hashes to their compositions. They are
// content-addressed, so they never go stale; the bound (maxCompEntries)
// drops arbitrary entries (files re-add theirs before reading:
// file.noteCompLocked).
type compCache struct {
	mu   sync.Mutex
	m    map[block.Hash]meta.Composition
	cost int
}

func (c *compCache) get(h block.Hash) (meta.Composition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	comp, ok := c.m[h]
	return comp, ok
}

func (c *compCache) add(h block.Hash, comp meta.Composition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[block.Hash]meta.Composition)
	}
	if old, ok := c.m[h]; ok {
		c.cost -= compCost(old)
	}
	c.cost += compCost(comp)
	for k, old := range c.m {
		if c.cost <= maxCompEntries {
			break
		}
		if k != h {
			delete(c.m, k)
			c.cost -= compCost(old)
		}
	}
	c.m[h] = comp
}

// assemble builds composed block h from comp and checks the result's
// hash; get fetches each piece (getBlock for a reader, getOnce for
// compaction).
func (c *Client) assemble(ctx context.Context, h block.Hash, comp meta.Composition, get func(context.Context, block.Hash) ([]byte, error)) ([]byte, error) {
	if comp.Base == h {
		return nil, fmt.Errorf("composed block %s: its own base: %w", h.Short(), block.ErrCorrupt)
	}
	// The base and the patches are fetched at once (each takes its own
	// fetch slot), then laid down in order.
	pieces := make([][]byte, 1+len(comp.Patches))
	errs := make([]error, len(pieces))
	var wg sync.WaitGroup
	fetch := func(i int, ph block.Hash) {
		if ph.IsZero() {
			return
		}
		wg.Go(func() { pieces[i], errs[i] = get(ctx, ph) })
	}
	fetch(0, comp.Base)
	for i, p := range comp.Patches {
		fetch(1+i, p.Hash)
	}
	wg.Wait()
	if errs[0] != nil {
		return nil, fmt.Errorf("composed block %s: base: %w", h.Short(), errs[0])
	}
	buf := make([]byte, comp.Len)
	copy(buf, pieces[0])
	for i, p := range comp.Patches {
		if uint64(p.Off)+uint64(p.Len) > uint64(len(buf)) {
			return nil, fmt.Errorf("composed block %s: patch [%d,+%d) past its %d bytes: %w", h.Short(), p.Off, p.Len, len(buf), block.ErrCorrupt)
		}
		dst := buf[p.Off : p.Off+p.Len]
		if p.Hash.IsZero() {
			clear(dst)
			continue
		}
		if err := errs[1+i]; err != nil {
			return nil, fmt.Errorf("composed block %s: patch %s: %w", h.Short(), p.Hash.Short(), err)
		}
		data := pieces[1+i]
		if len(data) != int(p.Len) {
			return nil, fmt.Errorf("composed block %s: patch %s of %d bytes, want %d: %w", h.Short(), p.Hash.Short(), len(data), p.Len, block.ErrCorrupt)
		}
		copy(dst, data)
	}
	if block.Sum(buf) != h {
		return nil, fmt.Errorf("composed block %s: the assembled content does not match its hash: %w", h.Short(), block.ErrCorrupt)
	}
	return buf, nil
}

// composePlan is how a dirty block will be uploaded as a composition.
type composePlan struct {
	old    block.Hash   // the committed version the runs changed
	base   block.Hash   // flattened: never a composed block
	prefix []meta.Patch // the patches of the committed block, if composed
	runs   [][2]int64   // changed ranges, clipped to the block's length
}

// planComposeLocked decides whether d is uploaded composed (see above).
func (f *file) planComposeLocked(d *dblock) *composePlan {
	b := d.base
	if !b.oldSet || b.old == staleBase() || b.sp.all || d.cut || (d.idx == 0 && f.hasInline) {
		return nil
	}
	w, i := d.idx/recipeWindow, d.idx%recipeWindow
	hs, ok := f.windows[w]
	if !ok {
		return nil // the committed version is not known here
	}
	var committed block.Hash
	if i < uint64(len(hs)) {
		committed = hs[i]
	}
	if committed != b.old {
		return nil
	}
	n := int64(len(d.buf))
	if n == f.bs && d.baseLen < n {
		// Appends filled the block: it is done changing (a sequential
		// writer has moved on), and a composition would only be
		// assembled from its pieces and stored whole once it rests
		// (compaction), holding the pieces and the block in memory
		// meanwhile. Stored whole now, once.
		return nil
	}
	plan := &composePlan{old: b.old, base: b.old}
	if comp, ok := f.comps[b.old]; ok {
		// Flattened as the meta service does it: the committed block's
		// base, its patches (cut at this block's length), then ours.
		plan.base = comp.Base
		for _, p := range comp.Patches {
			if int64(p.Off) < n {
				p.Len = uint32(min(int64(p.Len), n-int64(p.Off)))
				plan.prefix = append(plan.prefix, p)
			}
		}
	}
	have := len(plan.prefix)
	var runs [][2]int64
	var bytes int64
	for _, r := range b.sp.iv {
		lo, hi := r.lo, min(r.hi, n)
		if lo >= hi {
			continue
		}
		runs = append(runs, [2]int64{lo, hi})
		bytes += hi - lo
	}
	var prior int64
	for _, p := range plan.prefix {
		prior += int64(p.Len)
	}
	if len(runs) == 0 || len(runs) > maxPatchRuns || have+len(runs) > meta.MaxPatches ||
		bytes > f.bs/4 || bytes > n/2 || prior+bytes > f.bs+f.bs/2 {
		return nil
	}
	plan.runs = runs
	return plan
}

// uploadComposed uploads the changed ranges of data as patch blocks and
// returns data's hash (from the committed version's tree and the runs,
// trees.go), its composition and the patches' replications merged into
// one.
func (c *Client) uploadComposed(ctx context.Context, data []byte, plan *composePlan, n placement.Spec) (block.Hash, *meta.Composition, *replication, error) {
	h := c.sumChanged(data, plan.old, plan.runs)
	if h == plan.base {
		// Written back as it was: the block is its committed self.
		return h, nil, nil, nil
	}
	comp := &meta.Composition{Len: uint32(len(data)), Base: plan.base, Patches: append([]meta.Patch(nil), plan.prefix...)}
	var reps []*replication
	for _, r := range plan.runs {
		ph, rep, err := c.upload(ctx, data[r[0]:r[1]], n)
		if err != nil {
			if rep != nil { // copies still under way use data
				reps = append(reps, rep)
			}
			return h, nil, mergeReplications(reps), err
		}
		if rep != nil {
			reps = append(reps, rep)
		}
		comp.Patches = append(comp.Patches, meta.Patch{Hash: ph, Off: uint32(r[0]), Len: uint32(r[1] - r[0])})
	}
	c.comps.add(h, *comp)
	return h, comp, mergeReplications(reps), nil
}

// mergeReplications returns one replication that completes when all of
// reps have (nil for none), with their errors joined.
func mergeReplications(reps []*replication) *replication {
	switch len(reps) {
	case 0:
		return nil
	case 1:
		return reps[0]
	}
	out := &replication{done: make(chan struct{})}
	go func() {
		var errs []error
		for _, r := range reps {
			<-r.done
			if r.err != nil {
				errs = append(errs, r.err)
			}
		}
		out.err = errors.Join(errs...)
		close(out.done)
	}()
	return out
}

// learnCompsLocked records compositions met in a recipe or a conflict.
// Past twice what it kept at its last pruning, the file forgets those no
// block of its recipe or of its changes names any more: a block under
// small writes has a new composition per commit, and a file held open
// for thousands of commits (a database) kept them all.
func (f *file) learnCompsLocked(comps map[block.Hash]meta.Composition) {
	for h, comp := range comps {
		if f.comps == nil {
			f.comps = make(map[block.Hash]meta.Composition)
		}
		f.comps[h] = comp
	}
	if len(f.comps) > f.compsPruneAt {
		f.pruneCompsLocked(comps)
		f.compsPruneAt = 2*len(f.comps) + 64
	}
}

// pruneCompsLocked drops the compositions no block of the file's recipe
// windows, uploads or changes names, except those just learned.
func (f *file) pruneCompsLocked(learned map[block.Hash]meta.Composition) {
	live := make(map[block.Hash]bool, len(learned))
	for h := range learned {
		live[h] = true
	}
	for _, hs := range f.windows {
		for _, h := range hs {
			if _, ok := f.comps[h]; ok {
				live[h] = true
			}
		}
	}
	for _, p := range f.pending {
		live[p.h], live[p.old] = true, true
	}
	for _, d := range f.dirty {
		live[d.old] = true
	}
	for _, d := range f.inflight {
		live[d.old] = true
	}
	for h := range f.comps {
		if !live[h] {
			delete(f.comps, h)
		}
	}
}

// noteCompLocked puts h's composition, if this file knows it, in the
// client-wide cache that getBlock reads, just before h is fetched.
func (f *file) noteCompLocked(h block.Hash) {
	if comp, ok := f.comps[h]; ok {
		f.c.comps.add(h, comp)
	}
}

// drop forgets h's composition (it is stored whole).
func (c *compCache) drop(h block.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[h]; ok {
		c.cost -= compCost(old)
		delete(c.m, h)
	}
}
