package gateway

import "tessera/internal/meta"

// Read-ahead of a fileset with prefetch "range". A hit never involves a
// gateway, so the owner sees a sequential reader only through its
// misses; with the link slower than the reader (a cold read over a WAN)
// the reader catches up with the window being fetched and misses on it.
// The owner uses that miss as the kernel uses its asynchronous read-ahead
// marker: a miss inside the last window issued means the reader entered
// it, and the next window is started at once, while the reader waits
// for the blocks of the one it is in. Before, the next window started
// only once the reader's miss after the window was served, and the link
// idled in between (bench/results/2026-11-25-gateway.md: one gateway at
// 0.89 of the link's cap).

// readAhead is a file's last read-ahead window [start, end) and where the
// reader was when it was issued (prev): a miss in [prev, start) is a
// reader still before it, the window being already under way.
type readAhead struct{ prev, start, end uint64 }

// maxReadAheads bounds the files whose read-ahead a group remembers; past
// it one is forgotten (it starts afresh at its next miss).
const maxReadAheads = 4096

// readAhead returns the blocks [from, to) to prefetch after a miss of
// blocks [first, end) of ino (nb blocks, windows of w), and remembers the
// window issued:
//   - a miss inside the last window: the next window after it, and what
//     is missing of the one the reader is in (from end);
//   - a miss before the last window, after where it was issued: the rest
//     up to the window's end (only what is not cached or under way is
//     fetched: blocks whose fetch failed);
//   - any other miss starts a new sequence: the w blocks after it.
func (g *Group) readAhead(ino meta.Ino, first, end, nb, w uint64) (from, to uint64) {
	g.st.mu.Lock()
	defer g.st.mu.Unlock()
	a, ok := g.st.ahead[ino]
	switch {
	case ok && first >= a.start && first < a.end:
		from, to = end, min(a.end+w, nb)
		a = readAhead{prev: a.start, start: a.end, end: to}
	case ok && first >= a.prev && first < a.start:
		return end, a.end
	default:
		from, to = end, min(end+w, nb)
		a = readAhead{prev: first, start: end, end: to}
	}
	if !ok && len(g.st.ahead) >= maxReadAheads {
		for k := range g.st.ahead {
			delete(g.st.ahead, k)
			break
		}
	}
	g.st.ahead[ino] = a
	return from, to
}

// forget drops the read-ahead of ino (cached whole: no more misses).
func (g *Group) forget(ino meta.Ino) {
	g.st.mu.Lock()
	defer g.st.mu.Unlock()
	delete(g.st.ahead, ino)
}
