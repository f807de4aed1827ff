package scrub_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/block/scrub"
)

// fakeClock advances only when slept on.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept += d
	return nil
}

func store(t *testing.T, n, size int) (*disk.Store, []block.Hash) {
	t.Helper()
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var hs []block.Hash
	for i := range n {
		data := bytes.Repeat([]byte{byte(i + 1)}, size)
		h := block.Sum(data)
		if err := st.Put(context.Background(), h, data); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return st, hs
}

// TestRoundFindsAndQuarantinesCorruptCopy: a flipped byte in one block file
// is found by one round, counted, and the file moved to quarantine/ (not
// deleted); the good blocks stay in place.
func TestRoundFindsAndQuarantinesCorruptCopy(t *testing.T) {
	st, hs := store(t, 5, 4096)
	bad := st.Path(hs[2])
	data, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	data[100] ^= 1
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	s := scrub.New(scrub.Config{Store: st, Rate: -1, Now: clk.Now, Sleep: clk.Sleep})
	if err := s.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := s.Progress()
	if p.Rounds != 1 || p.Blocks != 5 || p.Bytes != 5*4096 || p.Corrupt != 1 || p.Running {
		t.Fatalf("progress after a round = %+v; want 1 round, 5 blocks, %d bytes, 1 corrupt", p, 5*4096)
	}
	if !strings.Contains(p.LastCorrupt, hs[2].String()) {
		t.Errorf("LastCorrupt %q does not name block %s", p.LastCorrupt, hs[2])
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("the corrupt file %s is still in the store (stat: %v)", bad, err)
	}
	q, _ := filepath.Glob(filepath.Join(st.Dir(), "quarantine", hs[2].String()+".*"))
	if len(q) != 1 {
		t.Fatalf("quarantine holds %v; want the corrupt copy of %s", q, hs[2])
	}
	if got, _ := os.ReadFile(q[0]); !bytes.Equal(got, data) {
		t.Errorf("the quarantined file is not the corrupt copy as it was")
	}
	for i, h := range hs {
		if i == 2 {
			continue
		}
		if _, err := st.Get(context.Background(), h); err != nil {
			t.Errorf("good block %d: %v", i, err)
		}
	}
	// A second round finds nothing new.
	if err := s.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := s.Progress(); p.Rounds != 2 || p.Blocks != 4 || p.Corrupt != 1 {
		t.Fatalf("progress after round 2 = %+v; want 2 rounds, 4 blocks, still 1 corrupt", p)
	}
}

// TestRoundPacedToRate: 8 blocks of 64 KiB at 64 KiB/s take at least 7
// seconds of the (fake) clock: the last block starts no earlier than its
// share of the budget allows.
func TestRoundPacedToRate(t *testing.T) {
	st, _ := store(t, 8, 64<<10)
	clk := &fakeClock{now: time.Unix(1000, 0)}
	s := scrub.New(scrub.Config{Store: st, Rate: 64 << 10, Now: clk.Now, Sleep: clk.Sleep})
	if err := s.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if clk.slept < 7*time.Second {
		t.Fatalf("a round of 512 KiB at 64 KiB/s waited %v; want at least 7s", clk.slept)
	}
	if p := s.Progress(); p.Blocks != 8 || p.Corrupt != 0 {
		t.Fatalf("progress = %+v", p)
	}
}

// TestRunSpacesRounds: Run starts rounds Interval apart and stops with its
// context.
func TestRunSpacesRounds(t *testing.T) {
	st, _ := store(t, 2, 1024)
	clk := &fakeClock{now: time.Unix(1000, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	var s *scrub.Scrubber
	sleeps := 0
	s = scrub.New(scrub.Config{Store: st, Rate: -1, Interval: time.Minute, Now: clk.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			sleeps++
			if sleeps == 3 {
				cancel()
			}
			return clk.Sleep(ctx, d)
		}})
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	<-done
	if p := s.Progress(); p.Rounds != 3 {
		t.Fatalf("rounds = %d after three waits; want 3", p.Rounds)
	}
	if clk.slept != 2*time.Minute {
		t.Fatalf("Run slept %v between 3 rounds; want 2m (one Interval each)", clk.slept)
	}
}
