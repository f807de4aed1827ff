package etcdkv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// plug records the commit Txns of a store and holds the first one until
// released, so that the Updates started meanwhile gather in the queue.
type plug struct {
	mu      sync.Mutex
	batches [][][]string // per Txn, the keys each member writes
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func newPlug(s *etcdkv.Store) *plug {
	p := &plug{held: make(chan struct{}), release: make(chan struct{})}
	first := true
	etcdkv.SetCommitHook(s, func(b [][]string) {
		p.mu.Lock()
		p.batches = append(p.batches, b)
		hold := first
		first = false
		p.mu.Unlock()
		if hold {
			close(p.held)
			<-p.release
		}
	})
	return p
}

// start sends the plugging Update (key "plug") and returns once the
// committer holds it; wait returns its error.
func (p *plug) start(t *testing.T, s *etcdkv.Store) (wait func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		errc <- s.Update(context.Background(), func(tx kv.Txn) error { return tx.Put([]byte("plug"), []byte("1")) })
	}()
	<-p.held
	t.Cleanup(p.open) // a failing test must not leave the committer held
	return func() {
		t.Helper()
		if err := <-errc; err != nil {
			t.Errorf("the plugging Update: %v", err)
		}
	}
}

func (p *plug) open() { p.once.Do(func() { close(p.release) }) }

func (p *plug) txns() [][][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.batches)
}

// waitQueued waits (bounded) until n Updates are queued behind the plug.
func waitQueued(t *testing.T, s *etcdkv.Store, n int) {
	t.Helper()
	for range 6000 {
		if etcdkv.QueueLen(s) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d Updates queued after 60s, want %d", etcdkv.QueueLen(s), n)
}

func get(t *testing.T, s kv.Store, key string) string {
	t.Helper()
	var v []byte
	err := s.View(context.Background(), func(tx kv.Txn) error {
		var err error
		v, _, err = tx.Get([]byte(key))
		return err
	})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return string(v)
}

// TestGroupCommitMerges: independent Updates that arrive while a Txn is in
// flight commit together in the next one, each with its own result.
func TestGroupCommitMerges(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, etcdkv.Options{})
	p := newPlug(s)
	waitPlug := p.start(t, s)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			key := fmt.Appendf(nil, "in/%02d", i)
			errs[i] = s.Update(context.Background(), func(tx kv.Txn) error {
				if _, ok, err := tx.Get(key); err != nil || ok {
					return fmt.Errorf("%s before its Update: %v, %v", key, ok, err)
				}
				return tx.Put(key, fmt.Appendf(nil, "v%d", i))
			})
		})
	}
	waitQueued(t, s, n)
	p.open()
	wg.Wait()
	waitPlug()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
		if got, want := get(t, s, fmt.Sprintf("in/%02d", i)), fmt.Sprintf("v%d", i); got != want {
			t.Errorf("in/%02d = %q, want %q", i, got, want)
		}
	}
	txns := p.txns()
	if len(txns) != 2 || len(txns[1]) != n {
		t.Fatalf("%d Updates behind a held Txn were sent as %d Txns (sizes %v); want one of %d", n, len(txns)-1, sizes(txns[1:]), n)
	}
}

func sizes(txns [][][]string) []int {
	var out []int
	for _, b := range txns {
		out = append(out, len(b))
	}
	return out
}

// TestGroupCommitDependent: Updates that read what another writes are not
// merged. Two that each read x and y and lower one of them while x+y > 0
// (write skew) would both commit in one merged Txn and break the
// invariant; so would a scan of a range another writes into.
func TestGroupCommitDependent(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s := open(t, c, etcdkv.Options{})
	err := s.Update(ctx, func(tx kv.Txn) error {
		return errors.Join(tx.Put([]byte("x"), []byte("1")), tx.Put([]byte("y"), []byte("0")))
	})
	if err != nil {
		t.Fatal(err)
	}
	p := newPlug(s)
	waitPlug := p.start(t, s)
	num := func(tx kv.Txn, k string) (int, error) {
		v, _, err := tx.Get([]byte(k))
		if err != nil {
			return 0, err
		}
		n, _ := strconv.Atoi(string(v))
		return n, nil
	}
	lower := func(k string) error {
		return s.Update(ctx, func(tx kv.Txn) error {
			x, err := num(tx, "x")
			if err != nil {
				return err
			}
			y, err := num(tx, "y")
			if err != nil {
				return err
			}
			if x+y <= 0 {
				return nil
			}
			v := map[string]int{"x": x, "y": y}[k] - 1
			return tx.Put([]byte(k), []byte(strconv.Itoa(v)))
		})
	}
	var sum string
	ops := []func() error{
		func() error { return lower("x") },
		func() error { return lower("y") },
		func() error { // scans r/, writes sum
			return s.Update(ctx, func(tx kv.Txn) error {
				n := 0
				err := tx.Scan([]byte("r/"), []byte("r0"), func(_, _ []byte) (bool, error) { n++; return true, nil })
				sum = strconv.Itoa(n)
				return errors.Join(err, tx.Put([]byte("sum"), []byte(sum)))
			})
		},
		func() error { // writes into the scanned range
			return s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("r/a"), []byte("1")) })
		},
	}
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() { errs[i] = op() })
	}
	waitQueued(t, s, len(ops))
	p.open()
	wg.Wait()
	waitPlug()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	x, _ := strconv.Atoi(get(t, s, "x"))
	y, _ := strconv.Atoi(get(t, s, "y"))
	if x+y != 0 {
		t.Errorf("x=%d y=%d after two concurrent 'lower one while x+y > 0': x+y = %d, want 0 (write skew)", x, y, x+y)
	}
	for _, b := range p.txns() {
		var w []string
		for _, m := range b {
			w = append(w, m...)
		}
		if slices.Contains(w, "x") && slices.Contains(w, "y") {
			t.Errorf("a Txn carried both Updates that read x and y: %v", b)
		}
		if slices.Contains(w, "sum") && slices.Contains(w, "r/a") {
			t.Errorf("a Txn carried a scan of r/ and a write into it: %v", b)
		}
	}
	if got := get(t, s, "sum"); got != sum {
		t.Errorf("sum = %q, but the committed scan counted %q", got, sum)
	}
}

// TestGroupCommitStaleMember: when one member of a merged Txn is stale, the
// others still commit (each retried alone with its own compares), and the
// stale one runs its fn again.
func TestGroupCommitStaleMember(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s := open(t, c, etcdkv.Options{})
	other := open(t, c, etcdkv.Options{Prefix: "/" + t.Name(), NoBatch: true})
	if err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("s"), []byte("old")) }); err != nil {
		t.Fatal(err)
	}
	p := newPlug(s)
	waitPlug := p.start(t, s)
	const fresh = 4
	var runs [fresh + 1]atomic.Int32
	errs := make([]error, fresh+1)
	var wg sync.WaitGroup
	for i := range fresh {
		wg.Go(func() {
			errs[i] = s.Update(ctx, func(tx kv.Txn) error {
				runs[i].Add(1)
				k := fmt.Appendf(nil, "f%d", i)
				if _, _, err := tx.Get(k); err != nil {
					return err
				}
				return tx.Put(k, []byte("done"))
			})
		})
	}
	wg.Go(func() {
		errs[fresh] = s.Update(ctx, func(tx kv.Txn) error {
			runs[fresh].Add(1)
			v, _, err := tx.Get([]byte("s"))
			if err != nil {
				return err
			}
			return tx.Put([]byte("t"), append([]byte("saw "), v...))
		})
	})
	waitQueued(t, s, fresh+1)
	// s changes under the queued reader of s.
	if err := other.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("s"), []byte("new")) }); err != nil {
		t.Fatal(err)
	}
	p.open()
	wg.Wait()
	waitPlug()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range fresh {
		if got := get(t, s, fmt.Sprintf("f%d", i)); got != "done" {
			t.Errorf("f%d = %q, want done", i, got)
		}
		if n := runs[i].Load(); n != 1 {
			t.Errorf("the fn of fresh Update %d ran %d times, want once (retried alone, not again)", i, n)
		}
	}
	if got := get(t, s, "t"); got != "saw new" {
		t.Errorf("t = %q, want \"saw new\" (the stale Update runs again)", got)
	}
	if n := runs[fresh].Load(); n != 2 {
		t.Errorf("the stale Update's fn ran %d times, want 2", n)
	}
	txns := p.txns()
	if len(txns) < 2 || len(txns[1]) != fresh+1 {
		t.Fatalf("Txns %v: want the held one, then one of all %d queued", sizes(txns), fresh+1)
	}
	// Then each member alone (fresh+1 Txns), then the stale one's rerun.
	if got := sizes(txns[2:]); len(got) != fresh+2 || slices.Max(got) != 1 {
		t.Errorf("after the failed merged Txn: Txns of sizes %v, want %d of one member", got, fresh+2)
	}
}

// TestGroupCommitWithdrawn: an Update whose context ends while it waits in
// the queue returns the context's error and writes nothing.
func TestGroupCommitWithdrawn(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, etcdkv.Options{})
	p := newPlug(s)
	waitPlug := p.start(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("w"), []byte("1")) })
	}()
	waitQueued(t, s, 1)
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || errors.Is(err, etcdkv.ErrNoMajority) {
		t.Errorf("Update cancelled in the queue: %v; want context.Canceled", err)
	}
	p.open()
	waitPlug()
	if got := get(t, s, "w"); got != "" {
		t.Errorf("w = %q after its Update was withdrawn, want absent", got)
	}
	if n := len(p.txns()); n != 1 {
		t.Errorf("%d Txns sent, want only the held one", n)
	}
}

// TestNoBatch: with group commit off (batch=0), every Update is a Txn of
// its own.
func TestNoBatch(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, etcdkv.Options{NoBatch: true})
	var txns atomic.Int32
	etcdkv.SetCommitHook(s, func(b [][]string) {
		if len(b) != 1 {
			t.Errorf("a Txn of %d Updates with batching off", len(b))
		}
		txns.Add(1)
	})
	const n = 10
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.Update(context.Background(), func(tx kv.Txn) error { return tx.Put(fmt.Appendf(nil, "k%d", i), []byte("v")) }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := txns.Load(); got != n {
		t.Errorf("%d Updates sent %d Txns with batching off, want %d", n, got, n)
	}
}

// TestGroupCommitInFlight: with two Txns allowed in flight, an independent
// Update is sent while the first Txn travels, and one that read what the
// travelling Txn writes waits for it (then runs again, seeing its write)
// instead of racing it.
func TestGroupCommitInFlight(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s := open(t, c, etcdkv.Options{InFlight: 2})
	p := newPlug(s)
	waitPlug := p.start(t, s)
	if err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("i"), []byte("1")) }); err != nil {
		t.Fatalf("an independent Update beside the held Txn: %v", err)
	}
	runs := 0
	errc := make(chan error, 1)
	go func() {
		errc <- s.Update(ctx, func(tx kv.Txn) error {
			runs++
			v, _, err := tx.Get([]byte("plug"))
			if err != nil {
				return err
			}
			return tx.Put([]byte("d"), append([]byte("saw "), v...))
		})
	}()
	waitQueued(t, s, 1)
	p.open()
	waitPlug()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "d"); got != "saw 1" || runs != 2 {
		t.Errorf("d = %q after %d runs; want \"saw 1\" after 2 (it waited for the Txn writing plug)", got, runs)
	}
}
