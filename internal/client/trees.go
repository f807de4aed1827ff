package client

import (
	"sync"
	"sync/atomic"

	"tessera/internal/block"
)

// A block under small writes is named by rehashing what changed.
//
// A composed block (compose.go) is uploaded as its changed ranges, but its
// name is still the hash of its whole content: a database committing one
// page into a 4 MiB block, or a log appending a record, hashed the whole
// block per commit (35% of the daemon's CPU under SQLite in WAL mode,
// bench/results/2026-11-29-tree-profile.md). The client keeps the hash
// tree (block.Tree) of the versions it composes, keyed by their names, and
// names the next version from the tree of the version it changed and the
// ranges it changed: the same ranges the composition's patches carry, so
// the name is exactly right whenever the composition is (a reader's
// assembly checks both against the whole content's hash). A version whose
// tree is not here (another client wrote it, or it was evicted) is hashed
// whole once, into a tree. A block under small writes that is uploaded
// whole (its composition reached meta.MaxPatches or 1.5 blocks of patches)
// keeps its tree too, so the next version is named from it.
//
// The ranges are the composition's, so a change they missed (a bug in
// tracking them) would name the content readers assemble while the writer
// holds its own buffer under that name, where a whole-content hash made
// readers fail on it. So every verifyEvery-th version named from a tree
// is hashed whole too; a difference is logged and the whole hash used (the
// readers' checks then fail loudly, as before): 1/64 of the old cost.
//
// Trees are content-addressed, so they never go stale. The cache holds at
// most treeCacheBytes (a 4 MiB block's tree is 16 KiB) and drops arbitrary
// entries past that; an idle client empties it.

// treeCacheBytes bounds the trees a client keeps.
const treeCacheBytes = 2 << 20

// verifyEvery: one version in this many named from a tree is hashed whole
// as well (see above).
const verifyEvery = 64

type treeCache struct {
	mu    sync.Mutex
	m     map[block.Hash]*block.Tree
	bytes int
	// named counts the composed versions named, whole those of them
	// whose predecessor's tree was not here, hashed the bytes hashed to
	// name them (Stats); updated counts those named from a tree
	// (verifyEvery).
	named, whole, hashed, updated atomic.Uint64
}

func (c *treeCache) get(h block.Hash) *block.Tree {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[h]
}

func (c *treeCache) add(t *block.Tree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := t.Sum()
	if _, ok := c.m[h]; ok {
		return
	}
	if c.m == nil {
		c.m = make(map[block.Hash]*block.Tree)
	}
	for k, old := range c.m {
		if c.bytes+t.Size() <= treeCacheBytes {
			break
		}
		delete(c.m, k)
		c.bytes -= old.Size()
	}
	if t.Size() > treeCacheBytes {
		return
	}
	c.m[h] = t
	c.bytes += t.Size()
}

func (c *treeCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.bytes = nil, 0
}

// sumChanged returns the name of data, which is version old of its block
// changed only in runs (and past the shorter of the two lengths), from
// old's tree when the client has it; it keeps data's tree for the next
// version.
func (c *Client) sumChanged(data []byte, old block.Hash, runs [][2]int64) block.Hash {
	var t *block.Tree
	if ot := c.trees.get(old); ot != nil {
		t = ot.Update(data, runs)
		if c.trees.updated.Add(1)%verifyEvery == 0 {
			if h := block.Sum(data); h != t.Sum() {
				c.log.Error("a composed block's changed ranges missed a change: named by its whole content",
					"block", h.Short(), "from", old.Short(), "ranges", len(runs))
				t = block.NewTree(data)
			}
		}
	} else {
		t = block.NewTree(data)
		c.trees.whole.Add(1)
	}
	c.trees.add(t)
	c.trees.named.Add(1)
	c.trees.hashed.Add(uint64(t.Hashed()))
	return t.Sum()
}

// sumTree names data by hashing it whole into a tree, which it keeps.
func (c *Client) sumTree(data []byte) block.Hash {
	t := block.NewTree(data)
	c.trees.add(t)
	return t.Sum()
}
