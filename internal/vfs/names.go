package vfs

import (
	"sync"
	"syscall"

	"tessera/internal/meta"
)

// names remembers the inode each non-directory name had when it was last
// listed or looked up, so that an unlink can name it to the client
// (client.UnlinkHinted) instead of looking it up again: rm -rf lists a
// directory and then unlinks every entry, one meta lookup each before
// (issue 28). A stale entry is harmless: the hint only picks the inode
// offered for the same-transaction reap. At most namesMax names are kept;
// past that the set starts afresh.
type names struct {
	mu sync.Mutex
	m  map[nameKey]meta.Ino
}

type nameKey struct {
	dir  meta.Ino
	name string
}

// namesMax bounds names: 2^15 names, a few MiB at most.
const namesMax = 1 << 15

// put remembers that dir/name held ino, a file of type mode (type bits);
// directories are left out (rmdir needs no hint).
func (n *names) put(dir meta.Ino, name string, ino meta.Ino, mode uint32) {
	if ino == 0 || mode&syscall.S_IFMT == syscall.S_IFDIR {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil || len(n.m) >= namesMax {
		n.m = make(map[nameKey]meta.Ino)
	}
	n.m[nameKey{dir, name}] = ino
}

// take returns and forgets the inode dir/name held when last seen.
func (n *names) take(dir meta.Ino, name string) (meta.Ino, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := nameKey{dir, name}
	ino, ok := n.m[k]
	if ok {
		delete(n.m, k)
	}
	return ino, ok
}
