package mover

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/meta"
)

// cutAfterList is a real block client whose server is closed as soon as
// the round has listed it: the server's site is cut off between the plan
// and the copies (issue 13's partition during a round). It counts the
// calls made to the closed server.
type cutAfterList struct {
	BlockServer
	cut   func()
	calls *atomic.Int64
}

func (s cutAfterList) List(ctx context.Context, fn func(block.Info) error) error {
	err := s.BlockServer.List(ctx, fn)
	s.cut()
	return err
}

func (s cutAfterList) Put(ctx context.Context, h block.Hash, data []byte) error {
	s.calls.Add(1)
	return s.BlockServer.Put(ctx, h, data)
}

func (s cutAfterList) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	s.calls.Add(1)
	return s.BlockServer.Get(ctx, h)
}

// TestMoverSkipsAServerOutOfReachForTheRound: a server cut off after the
// round listed it is tried by at most Concurrency copies (the ones already
// in flight when the first failed); the round's other copies are not each
// made to wait out the block client's budget against it, so the round ends
// and the next one plans without the server. The round's error names the
// server once. (Before: every planned copy tried it, a round of N copies to
// a cut-off site lasting about N/Concurrency budgets, its status "running"
// meanwhile.)
func TestMoverSkipsAServerOutOfReachForTheRound(t *testing.T) {
	c := newTestCluster(t, 3, 3)
	c.writeFile("f", 40)
	// b2 lost every copy: each of the 40 blocks needs one there.
	for _, h := range c.live {
		if _, err := c.stores["b2"].Remove(c.ctx, h, 1<<62); err != nil {
			t.Fatal(err)
		}
	}
	var calls atomic.Int64
	var once sync.Once
	mv := c.mover(nil)
	mv.cfg.Dial = func(s meta.Server) (BlockServer, error) {
		bs := blockclient.New(s.Addr, blockclient.Options{Tries: 1})
		if s.ID != "b2" {
			return bs, nil
		}
		return cutAfterList{BlockServer: bs, calls: &calls, cut: func() { once.Do(c.servers["b2"].Close) }}, nil
	}
	p, err := mv.Round(c.ctx)
	if err == nil {
		t.Fatalf("round with b2 cut off: no error; report %+v", p)
	}
	if n := calls.Load(); n > int64(mv.cfg.Concurrency) {
		t.Errorf("b2, cut off, was called %d times in the round; want at most %d (the copies in flight when it first failed)",
			n, mv.cfg.Concurrency)
	}
	if !strings.Contains(err.Error(), "b2") || !errors.Is(err, block.ErrUnavailable) {
		t.Errorf("round error %v: want b2 named as unavailable", err)
	}
	if p.UnderReplicated != 40 || p.Running {
		t.Errorf("report after the round: %+v; want the 40 blocks still under-replicated, not running", p)
	}
}
