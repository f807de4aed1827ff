package kvlocal

import (
	"context"
	"fmt"
	"sync"

	"tessera/internal/kv"
)

// Elector is a kv.Elector within one process; see the package comment. The
// zero value is ready to use.
type Elector struct {
	mu     sync.Mutex
	held   map[string]*leadership
	closed bool
	done   chan struct{} // closed by Close; made lazily under mu
}

// leadership is one won election.
type leadership struct {
	e    *Elector
	name string
	once sync.Once
	done chan struct{}
}

func (e *Elector) closedChan() chan struct{} {
	if e.done == nil {
		e.done = make(chan struct{})
	}
	return e.done
}

// Campaign implements kv.Elector.
func (e *Elector) Campaign(ctx context.Context, name, id string) (kv.Leadership, error) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, fmt.Errorf("kvlocal: campaign %q as %q: %w", name, id, kv.ErrClosed)
		}
		if err := ctx.Err(); err != nil {
			e.mu.Unlock()
			return nil, fmt.Errorf("kvlocal: campaign %q as %q: %w", name, id, err)
		}
		cur := e.held[name]
		if cur == nil {
			l := &leadership{e: e, name: name, done: make(chan struct{})}
			if e.held == nil {
				e.held = make(map[string]*leadership)
			}
			e.held[name] = l
			e.mu.Unlock()
			return l, nil
		}
		closed := e.closedChan()
		e.mu.Unlock()
		select {
		case <-cur.done:
		case <-closed:
		case <-ctx.Done():
		}
	}
}

// Close ends every leadership and fails later and waiting Campaigns.
func (e *Elector) Close() {
	e.mu.Lock()
	held := e.held
	e.held = nil
	if !e.closed {
		e.closed = true
		close(e.closedChan())
	}
	e.mu.Unlock()
	for _, l := range held {
		l.end()
	}
}

// Done implements kv.Leadership.
func (l *leadership) Done() <-chan struct{} { return l.done }

// Resign implements kv.Leadership.
func (l *leadership) Resign(context.Context) error {
	l.e.mu.Lock()
	if l.e.held[l.name] == l {
		delete(l.e.held, l.name)
	}
	l.e.mu.Unlock()
	l.end()
	return nil
}

func (l *leadership) end() { l.once.Do(func() { close(l.done) }) }
