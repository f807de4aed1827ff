package backoff

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"tessera/internal/clock"
)

const ms = time.Millisecond

func TestDelayDoublesToTheCap(t *testing.T) {
	p := Policy{Base: 100 * ms, Max: 30 * time.Second}
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms,
		6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := p.Delay(n); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
	for _, n := range []int{64, 1000, math.MaxInt32, math.MaxInt} {
		if got := p.Delay(n); got != p.Max {
			t.Errorf("Delay(%d) = %v, want the cap %v", n, got, p.Max)
		}
	}
	if got := p.Delay(-3); got != p.Base {
		t.Errorf("Delay(-3) = %v, want the base", got)
	}
}

func TestDelayWithoutCapStopsAtTheLongestDuration(t *testing.T) {
	p := Policy{Base: time.Second}
	if got := p.Delay(10); got != 1024*time.Second {
		t.Fatalf("Delay(10) = %v", got)
	}
	for _, n := range []int{63, 64, 1 << 20} {
		if got := p.Delay(n); got != math.MaxInt64 {
			t.Fatalf("Delay(%d) = %v, want the longest Duration", n, got)
		}
	}
}

func TestDelayFactor(t *testing.T) {
	p := Policy{Base: 50 * ms, Max: time.Second, Factor: 1.5}
	want := []time.Duration{50 * ms, 75 * ms, 112500 * time.Microsecond, 168750 * time.Microsecond}
	for n, w := range want {
		if got := p.Delay(n); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
	if got := p.Delay(20); got != time.Second {
		t.Errorf("Delay(20) = %v, want the cap", got)
	}
}

// seeded is a Policy's Rand that replays: the same seed, the same draws.
func seeded(seed uint64) func(int64) int64 {
	return rand.New(rand.NewPCG(seed, seed)).Int64N
}

func TestNextJitterStaysInItsWindowAndReplays(t *testing.T) {
	p := Policy{Base: 10 * ms, Max: 80 * ms, Jitter: 0.5}
	a, b := p, p
	a.Rand, b.Rand = seeded(7), seeded(7)
	ba, bb := a.Start(), b.Start()
	distinct := map[time.Duration]bool{}
	for i := range 200 {
		d := p.Delay(i)
		x, y := ba.Next(), bb.Next()
		if x != y {
			t.Fatalf("wait %d: %v and %v from the same seed", i, x, y)
		}
		if lo, hi := d/2, d*3/2; x < lo || x >= hi {
			t.Fatalf("wait %d is %v, not in [%v, %v)", i, x, lo, hi)
		}
		distinct[x] = true
	}
	if len(distinct) < 100 {
		t.Fatalf("only %d distinct waits in 200: no jitter", len(distinct))
	}
	if ba.Waits() != 200 {
		t.Fatalf("Waits = %d, want 200", ba.Waits())
	}
}

func TestNextWithoutJitterIsDelay(t *testing.T) {
	p := Policy{Base: ms, Max: 4 * ms}
	b := p.Start()
	for i, w := range []time.Duration{ms, 2 * ms, 4 * ms, 4 * ms} {
		if got := b.Next(); got != w {
			t.Fatalf("wait %d is %v, want %v", i, got, w)
		}
	}
	b.Reset()
	if got := b.Next(); got != ms || b.Waits() != 1 {
		t.Fatalf("after Reset: wait %v (waits %d), want the base and 1", got, b.Waits())
	}
}

// waitArmed waits for the Backoff's goroutine to arm its timer on clk.
func waitArmed(t *testing.T, clk *clock.Fake, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); clk.Pending() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %d armed timers (%d)", n, clk.Pending())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWaitSleepsEachWaitOnTheClock(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b := Policy{Base: ms, Max: 4 * ms}.Start()
	for i, w := range []time.Duration{ms, 2 * ms, 4 * ms, 4 * ms} {
		done := make(chan error, 1)
		go func() { done <- b.Wait(context.Background(), clk) }()
		waitArmed(t, clk, 1)
		clk.Advance(w - 1)
		select {
		case err := <-done:
			t.Fatalf("wait %d returned (%v) 1 ns before its %v", i, err, w)
		default:
		}
		clk.Advance(1)
		if err := <-done; err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
}

func TestWaitReturnsWhenTheContextEnds(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b := Policy{Base: time.Hour}.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx, clk) }()
	waitArmed(t, clk, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if clk.Pending() != 0 {
		t.Fatalf("%d timers left armed after a cancelled wait", clk.Pending())
	}
	// A context already ended: no timer, and the sequence does not move.
	if err := b.Wait(ctx, clk); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context = %v", err)
	}
	if b.Waits() != 1 || clk.Pending() != 0 {
		t.Fatalf("after a Wait on an ended context: %d waits, %d timers; want 1, 0", b.Waits(), clk.Pending())
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer dcancel()
	<-dctx.Done()
	if err := b.Wait(dctx, clk); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past the deadline = %v, want DeadlineExceeded", err)
	}
}

// TestUncheckedPolicyStaysSane: a Policy Check refuses still gives waits
// in [0, the longest Duration]: a factor below 1 or NaN does not grow, a
// negative base waits 0, a negative cap is none.
func TestUncheckedPolicyStaysSane(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		last time.Duration // the 70th wait
	}{
		{Policy{Base: ms, Factor: -2}, ms},
		{Policy{Base: ms, Factor: math.NaN()}, ms},
		{Policy{Base: ms, Factor: 0.5, Jitter: math.NaN()}, ms},
		{Policy{Base: -ms}, 0},
		{Policy{Base: ms, Max: -1}, math.MaxInt64},
	} {
		b := c.p.Start()
		var d time.Duration
		for n := range 70 {
			if d = b.Next(); d < 0 {
				t.Fatalf("%+v: wait %d is %v", c.p, n, d)
			}
		}
		if d != c.last {
			t.Errorf("%+v: 70th wait %v, want %v", c.p, d, c.last)
		}
	}
}

func TestCheckNamesWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string // "" for a good policy
	}{
		{Policy{Base: ms}, ""},
		{Policy{Base: ms, Max: time.Second, Factor: 1.6, Jitter: 0.2}, ""},
		{Policy{}, "base 0s"},
		{Policy{Base: time.Second, Max: ms}, "max 1ms: below the base"},
		{Policy{Base: ms, Max: -1}, "max -1ns"},
		{Policy{Base: ms, Factor: 0.5}, "factor 0.5"},
		{Policy{Base: ms, Factor: math.NaN()}, "factor NaN"},
		{Policy{Base: ms, Jitter: 1.5}, "jitter 1.5"},
		{Policy{Base: ms, Jitter: -0.1}, "jitter -0.1"},
	} {
		err := c.p.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%+v) = %v, want nil", c.p, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Check(%+v) = %v, want it to name %q", c.p, err, c.want)
		}
	}
}
