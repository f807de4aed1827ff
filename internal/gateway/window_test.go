package gateway_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"tessera/internal/gateway"
	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// gateHome is a home store whose reads wait for the test: each ReadAt
// announces itself on started and goes on when the test answers on its
// go channel (nil: read, an error: fail with it), so that the test holds
// reads in flight as long as it likes without sleeping. It counts the
// reads in flight and the most there ever were.
type gateHome struct {
	home.Store
	started chan gateRead
	mu      sync.Mutex
	now     int
	peak    int
}

type gateRead struct {
	off int64
	go_ chan error
}

func (g *gateHome) ReadAt(ctx context.Context, path string, p []byte, off int64) (int, error) {
	g.mu.Lock()
	g.now++
	g.peak = max(g.peak, g.now)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
	}()
	r := gateRead{off: off, go_: make(chan error, 1)}
	select {
	case g.started <- r:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case err := <-r.go_:
		if err != nil {
			return 0, err
		}
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return g.Store.ReadAt(ctx, path, p, off)
}

func (g *gateHome) counts() (now, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.peak
}

// newGateEnv is an env whose Ingester reads home through a gateHome in
// chunks of one block, inFlight at a time, with a home file "big" of
// blocks whole blocks listed; it returns the file's placeholder and bytes.
func newGateEnv(t *testing.T, inFlight, blocks int) (*env, *gateHome, meta.Inode, []byte) {
	t.Helper()
	return newGateEnvOpts(t, gateway.Options{InFlight: inFlight}, blocks)
}

// newGateEnvOpts is newGateEnv with opts (Open and Chunk are set here).
func newGateEnvOpts(t *testing.T, opts gateway.Options, blocks int) (*env, *gateHome, meta.Inode, []byte) {
	t.Helper()
	gh := &gateHome{started: make(chan gateRead)}
	open := func(ctx context.Context, url string) (home.Store, error) {
		s, err := home.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		gh.Store = s
		return gh, nil
	}
	opts.Open, opts.Chunk = open, bs
	e := newEnvWith(t, meta.ModeRO, opts)
	data := randBytes(blocks*bs, 11)
	e.put(t, "big", data)
	ctx := context.Background()
	if _, err := e.g.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	in, err := e.svc.Lookup(ctx, e.root, "big")
	if err != nil {
		t.Fatal(err)
	}
	return e, gh, in, data
}

// nextRead waits for the next home read to start; a minute without one
// fails the test (a guard against a hang, not a speed budget).
func nextRead(t *testing.T, gh *gateHome, fetched <-chan error) gateRead {
	t.Helper()
	select {
	case r := <-gh.started:
		return r
	case err := <-fetched:
		t.Fatalf("the fetch ended (%v) while the test waited for another home read", err)
	case <-time.After(time.Minute):
		t.Fatal("no home read started within a minute")
	}
	return gateRead{}
}

// TestFetchKeepsWindowInFlight: a fetch of 12 blocks with InFlight 4 has
// 4 home reads in flight at once and never more; the first range is
// stored and recorded while the next three are still being read (a slot
// is freed only by a stored range), and the file ends cached with home's
// bytes.
func TestFetchKeepsWindowInFlight(t *testing.T) {
	const blocks, window = 12, 4
	e, gh, in, data := newGateEnv(t, window, blocks)
	ctx := context.Background()
	fetched := make(chan error, 1)
	go func() {
		_, err := e.g.Fetch(ctx, in.Ino, 0, int64(blocks*bs))
		fetched <- err
	}()
	var held []gateRead // reads started and not answered, oldest first
	for range window {
		held = append(held, nextRead(t, gh, fetched))
	}
	if now, _ := gh.counts(); now != window {
		t.Fatalf("%d home reads in flight, want the window's %d", now, window)
	}
	// They start in any order: the first window's ranges, each once.
	slices.SortFunc(held, func(a, b gateRead) int { return cmp.Compare(a.off, b.off) })
	for i, r := range held {
		if r.off != int64(i*bs) {
			t.Fatalf("read %d at %d, want %d", i, r.off, i*bs)
		}
	}
	// Let the first range go: the next read starts only once it is
	// stored, and then it is recorded while ranges 1-3 are still read.
	held[0].go_ <- nil
	held = append(held[1:], nextRead(t, gh, fetched))
	mid, err := e.svc.GetAttr(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if c := mid.Gateway.Cached; len(c) != 1 || c[0] != (meta.BlockRange{First: 0, End: 1}) {
		t.Fatalf("cached runs while ranges 1-4 are read: %v, want [0,1)", c)
	}
	if now, _ := gh.counts(); now != window {
		t.Fatalf("%d home reads in flight after one was stored, want %d", now, window)
	}
	// The rest, oldest first.
	for started := window + 1; len(held) > 0; {
		held[0].go_ <- nil
		held = held[1:]
		if started < blocks {
			held = append(held, nextRead(t, gh, fetched))
			started++
		}
	}
	if err := <-fetched; err != nil {
		t.Fatal(err)
	}
	if now, peak := gh.counts(); now != 0 || peak != window {
		t.Errorf("reads in flight after the fetch %d, most at once %d; want 0 and %d", now, peak, window)
	}
	out, err := e.svc.GetAttr(ctx, in.Ino)
	if err != nil || out.Gateway.State != meta.CacheCached {
		t.Fatalf("after the fetch: %+v, %v", out.Gateway, err)
	}
	if got := e.read(t, in.Ino); !bytes.Equal(got, data) {
		t.Errorf("read %d bytes after the fetch, differ from home's %d", len(got), len(data))
	}
}

// TestFetchErrorStopsWindow: the third range of a fetch fails; the fetch
// names home's error, the two ranges before it stay recorded and read
// home's bytes, none after it is recorded, and no home read is left in
// flight.
func TestFetchErrorStopsWindow(t *testing.T) {
	const blocks, window = 8, 4
	e, gh, in, data := newGateEnv(t, window, blocks)
	ctx := context.Background()
	errFail := errors.New("range 2 fails (test)")
	fetched := make(chan error, 1)
	go func() {
		_, err := e.g.Fetch(ctx, in.Ino, 0, int64(blocks*bs))
		fetched <- err
	}()
	var err error
	for done := false; !done; {
		select {
		case r := <-gh.started:
			if r.off == 2*bs {
				r.go_ <- errFail
			} else {
				r.go_ <- nil
			}
		case err = <-fetched:
			done = true
		case <-time.After(time.Minute):
			t.Fatal("the fetch did not end within a minute")
		}
	}
	if !errors.Is(err, errFail) {
		t.Fatalf("fetch: %v, want home's error", err)
	}
	if now, peak := gh.counts(); now != 0 || peak > window {
		t.Errorf("reads in flight after the fetch %d, most at once %d (window %d)", now, peak, window)
	}
	out, err := e.svc.GetAttr(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if c := out.Gateway.Cached; out.Gateway.State != meta.CachePartial || len(c) != 1 || c[0] != (meta.BlockRange{First: 0, End: 2}) {
		t.Fatalf("after the failed fetch: state %v runs %v, want partial [0,2)", out.Gateway.State, c)
	}
	h, _, err := e.data.Open(ctx, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	buf := make([]byte, 2*bs)
	if k, err := h.Read(ctx, 0, buf); err != nil || !bytes.Equal(buf[:k], data[:2*bs]) {
		t.Errorf("the recorded blocks: %d bytes, %v; differ from home's", k, err)
	}
}

// TestFetchesShareBufferBound: four fetches at once of an Ingester whose
// windows may hold 4 reads each but whose fetches together may hold 3
// chunks (MaxBuffered) never have more than 3 home reads in flight (the
// count goes up as a read starts, before the test answers it), and the
// file ends cached with home's bytes. Before the bound each fetch kept a
// window of its own (16 reads in flight here; a Fetch of a whole 1 GiB
// file through a gateway process held 1.3 GiB, issue 23).
func TestFetchesShareBufferBound(t *testing.T) {
	const blocks, window, limit, fetches = 16, 4, 3, 4
	e, gh, in, data := newGateEnvOpts(t, gateway.Options{InFlight: window, MaxBuffered: limit * bs}, blocks)
	ctx := context.Background()
	fetched := make(chan error, fetches)
	per := blocks / fetches
	for i := range fetches {
		go func() {
			_, err := e.g.Fetch(ctx, in.Ino, int64(i*per*bs), int64(per*bs))
			fetched <- err
		}()
	}
	// Reads are held, so that the fetches' windows fill: the oldest is
	// answered only when no read has started for a while. How long that
	// while is decides nothing: the bound holds whenever reads are
	// answered (a shorter one only makes an overshoot less likely seen).
	var held []gateRead
	release := func() {
		held[0].go_ <- nil
		held = held[1:]
	}
	for ended, idle := 0, 0; ended < fetches; {
		select {
		case r := <-gh.started:
			held, idle = append(held, r), 0
		case err := <-fetched:
			if err != nil {
				t.Fatal(err)
			}
			ended++
		case <-time.After(50 * time.Millisecond):
			if len(held) > 0 {
				release()
			} else if idle++; idle == 1200 {
				t.Fatal("no home read started and no fetch ended within a minute")
			}
		}
	}
	if now, peak := gh.counts(); now != 0 || peak > limit {
		t.Errorf("reads in flight after the fetches %d, most at once %d; want 0 and at most %d (MaxBuffered)", now, peak, limit)
	}
	out, err := e.svc.GetAttr(ctx, in.Ino)
	if err != nil || out.Gateway.State != meta.CacheCached {
		t.Fatalf("after the fetches: %+v, %v", out.Gateway, err)
	}

	if got := e.read(t, in.Ino); !bytes.Equal(got, data) {
		t.Errorf("read %d bytes after the fetches, differ from home's %d", len(got), len(data))
	}
}
