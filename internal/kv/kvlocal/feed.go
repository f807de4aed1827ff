package kvlocal

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"tessera/internal/kv"
)

// Bounds of a Feed's memory.
const (
	// HistoryCommits is how many of the latest commits Watch can replay.
	HistoryCommits = 1024
	// HistoryBytes bounds the keys and values the history holds. The
	// meta service's watchers start from the present (from 0), so the
	// history serves only a watcher resuming after a short gap: 1 MiB.
	// (It was 8 MiB: under an untar with a policy that commits each write
	// the inode records of the last commits filled it, 9 MB of the
	// daemon's live heap at its peak.)
	HistoryBytes = 1 << 20
	// MaxQueued is how many undelivered commits a watcher may lag by
	// before it is dropped.
	MaxQueued = 4096
)

// Feed is an in-memory change feed; see the package comment. The zero
// value is ready to use.
type Feed struct {
	mu     sync.Mutex
	rev    int64
	hist   [][]kv.Change // oldest first
	bytes  int
	lost   int64 // the newest revision dropped from hist (0: none)
	subs   map[*sub]struct{}
	closed bool
}

// sub is one watcher: its queue and the goroutine that drains it into ch.
type sub struct {
	prefix []byte
	from   int64 // deliver only revisions after it
	ch     chan []kv.Change
	queue  [][]kv.Change // guarded by Feed.mu
	wake   chan struct{} // one slot: the queue grew or the sub was dropped
	drop   bool          // guarded by Feed.mu: close ch without draining
}

// Publish stamps one commit's writes with the next revision and delivers
// them. It takes ownership of changes (and of their slices). The engine
// calls it in commit order; an empty commit is not published.
func (f *Feed) Publish(changes []kv.Change) int64 {
	if len(changes) == 0 {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rev++
	n := 0
	for i := range changes {
		changes[i].Rev = f.rev
		n += len(changes[i].Key) + len(changes[i].Value)
	}
	f.hist = append(f.hist, changes)
	f.bytes += n
	for len(f.hist) > 1 && (len(f.hist) > HistoryCommits || f.bytes > HistoryBytes) {
		old := f.hist[0]
		f.hist[0] = nil
		f.hist = f.hist[1:]
		f.lost = old[0].Rev
		for _, c := range old {
			f.bytes -= len(c.Key) + len(c.Value)
		}
	}
	for s := range f.subs {
		f.deliver(s, changes)
	}
	return f.rev
}

// deliver queues the part of one commit that s watches. f.mu is held.
func (f *Feed) deliver(s *sub, changes []kv.Change) {
	var mine []kv.Change
	for _, c := range changes {
		if c.Rev > s.from && bytes.HasPrefix(c.Key, s.prefix) {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 {
		return
	}
	if len(s.queue) >= MaxQueued {
		f.dropLocked(s)
		return
	}
	s.queue = append(s.queue, mine)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (f *Feed) dropLocked(s *sub) {
	delete(f.subs, s)
	s.drop = true
	s.queue = nil
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Watch implements kv.Watcher.
func (f *Feed) Watch(ctx context.Context, prefix []byte, from int64) (<-chan []kv.Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("kvlocal: watch: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("kvlocal: watch: %w", kv.ErrClosed)
	}
	s := &sub{
		prefix: bytes.Clone(prefix),
		from:   from,
		ch:     make(chan []kv.Change),
		wake:   make(chan struct{}, 1),
	}
	if from > 0 && from < f.lost {
		// The commits right after from are no longer held: the caller
		// must resync.
		close(s.ch)
		return s.ch, nil
	}
	if from > 0 {
		for _, h := range f.hist {
			if h[0].Rev > from {
				f.deliver(s, h)
			}
		}
	}
	if f.subs == nil {
		f.subs = make(map[*sub]struct{})
	}
	f.subs[s] = struct{}{}
	go f.run(ctx, s)
	return s.ch, nil
}

// run hands s's queue to its channel until ctx ends or s is dropped.
func (f *Feed) run(ctx context.Context, s *sub) {
	defer close(s.ch)
	for {
		f.mu.Lock()
		if s.drop {
			f.mu.Unlock()
			return
		}
		var next []kv.Change
		if len(s.queue) > 0 {
			next = s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
		}
		f.mu.Unlock()
		if next == nil {
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				f.cancel(s)
				return
			}
		}
		select {
		case s.ch <- next:
		case <-ctx.Done():
			f.cancel(s)
			return
		}
	}
}

func (f *Feed) cancel(s *sub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, s)
}

// Close ends every watch (their channels close) and refuses new ones.
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for s := range f.subs {
		f.dropLocked(s)
	}
}
