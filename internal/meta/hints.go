package meta

import "sync"

// nameHints remembers which inode a directory entry named when this
// Service last read or made it, so that a Lookup reads the directory, the
// entry and (the hint's) inode in one kv.GetMany: one round trip on etcd
// instead of two. A hint is never trusted: the entry read in the same
// snapshot decides, and a wrong or stale hint costs the second read it
// would have cost anyway. Bounded (maxNameHints entries, ~100 bytes each
// plus the name: a few MiB), whatever the namespace's size: when full, an
// arbitrary entry makes room. Kept only where the store reads several keys
// in one call (kv.MultiGetter): on an engine that reads key by key (Pebble,
// memkv) the hint saves no call and its map costs a lookup per Lookup and
// Create and its share of the collector's work.
type nameHints struct {
	mu sync.Mutex
	m  map[nameHint]Ino
}

type nameHint struct {
	parent Ino
	name   string
}

// maxNameHints bounds the hints a Service keeps.
const maxNameHints = 1 << 16

func newNameHints() *nameHints { return &nameHints{m: make(map[nameHint]Ino)} }

func (h *nameHints) get(parent Ino, name string) (Ino, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ino, ok := h.m[nameHint{parent, name}]
	return ino, ok
}

func (h *nameHints) put(parent Ino, name string, ino Ino) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := nameHint{parent, name}
	if _, ok := h.m[k]; !ok && len(h.m) >= maxNameHints {
		for old := range h.m {
			delete(h.m, old)
			break
		}
	}
	h.m[k] = ino
}

func (h *nameHints) drop(parent Ino, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, nameHint{parent, name})
}
