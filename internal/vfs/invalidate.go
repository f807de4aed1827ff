package vfs

import (
	"sync"

	"tessera/internal/meta"
)

// Invalidations fans a client's invalidations out to the front ends that
// keep caches of their own (a kernel's page and attribute caches): give
// its Invalidate to the client (client.Config.OnInvalidate: a callback
// from the meta service said another client changed the inode), made
// before any front end exists, and Subscribe each front end once it does.
// Until a subscription, invalidations are dropped. The zero value is ready.
type Invalidations struct {
	mu   sync.Mutex
	next int
	subs map[int]func(meta.Ino)
}

// Subscribe calls fn with every inode invalidated from now on, until the
// returned cancel is called. fn must not block: it runs on the client's
// callback path.
func (n *Invalidations) Subscribe(fn func(meta.Ino)) (cancel func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.subs == nil {
		n.subs = make(map[int]func(meta.Ino))
	}
	n.next++
	id := n.next
	n.subs[id] = fn
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.subs, id)
	}
}

// Invalidate passes ino on to every subscriber.
func (n *Invalidations) Invalidate(ino meta.Ino) {
	n.mu.Lock()
	fns := make([]func(meta.Ino), 0, len(n.subs))
	for _, fn := range n.subs {
		fns = append(fns, fn)
	}
	n.mu.Unlock()
	for _, fn := range fns {
		fn(ino)
	}
}
