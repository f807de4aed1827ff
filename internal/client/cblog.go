package client

import (
	"sync"

	"tessera/internal/meta"
)

// recentCallbacks is how many of the latest callbacks a callbackLog
// remembers by inode.
const recentCallbacks = 256

// callbackLog records which inodes were called back recently, so that
// attributes read from the meta service can be checked against the
// callbacks that arrived while they were on their way. A reply read before
// a change may arrive after the change's callback was applied and
// acknowledged (replies and callbacks travel separately): adopting it as
// fresh would cache the old state under no lease, where no later callback
// corrects it. It is safe for concurrent use.
type callbackLog struct {
	mu     sync.Mutex
	gen    uint64 // counts callbacks received
	recent [recentCallbacks]loggedCallback
}

type loggedCallback struct {
	ino meta.Ino
	gen uint64
}

// mark returns the log's position: take it before a call whose reply is
// adopted, and pass it to since.
func (l *callbackLog) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// record notes a callback for ino.
func (l *callbackLog) record(ino meta.Ino) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	l.recent[l.gen%recentCallbacks] = loggedCallback{ino: ino, gen: l.gen}
}

// since reports whether ino may have been called back after mark (true
// also when the log no longer reaches back so far).
func (l *callbackLog) since(ino meta.Ino, mark uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen-mark >= recentCallbacks {
		return l.gen != mark
	}
	for g := mark + 1; g <= l.gen; g++ {
		if r := l.recent[g%recentCallbacks]; r.gen == g && r.ino == ino {
			return true
		}
	}
	return false
}
