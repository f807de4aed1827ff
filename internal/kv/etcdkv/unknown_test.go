package etcdkv_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// unknownRig is one etcd member behind a clientProxy: store s talks
// through the proxy, direct to the member.
type unknownRig struct {
	t      *testing.T
	p      *clientProxy
	s      *etcdkv.Store
	direct *clientv3.Client
	prefix string
	calls  atomic.Int64 // runs of incr's fn
}

func newUnknownRig(t *testing.T, o etcdkv.Options) *unknownRig {
	c := etcdtest.Start(t, 1)
	r := &unknownRig{t: t, p: newClientProxy(t, c.Members[0].ClientURL), prefix: "/unknown/"}
	o.Endpoints, o.Prefix = []string{r.p.URL()}, r.prefix
	r.s = openOn(t, o)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	r.direct = cli
	r.put("n", "0")
	return r
}

// put writes store key k directly, as another writer would.
func (r *unknownRig) put(k, v string) {
	r.t.Helper()
	if _, err := r.direct.Put(context.Background(), r.prefix+"k/"+k, v); err != nil {
		r.t.Fatal(err)
	}
}

// get reads store key k directly ("" when absent).
func (r *unknownRig) get(k string) string {
	r.t.Helper()
	resp, err := r.direct.Get(context.Background(), r.prefix+"k/"+k)
	if err != nil {
		r.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// waitFor polls until store key k holds v (bounded: it fails the test
// after a minute).
func (r *unknownRig) waitFor(k, v string) {
	for range 6000 {
		if r.get(k) == v {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.t.Errorf("%s never became %q", k, v)
}

// onFirstCommit runs fn (once) when the store is about to send its
// first commit Txn.
func (r *unknownRig) onFirstCommit(fn func()) {
	var once sync.Once
	etcdkv.SetCommitHook(r.s, func([][]string) { once.Do(fn) })
}

// incr adds one to n and writes "who" blindly, in one Update.
func (r *unknownRig) incr(ctx context.Context) error {
	return r.s.Update(ctx, func(tx kv.Txn) error {
		r.calls.Add(1)
		v, _, err := tx.Get([]byte("n"))
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return err
		}
		if err := tx.Put([]byte("n"), []byte(strconv.Itoa(n+1))); err != nil {
			return err
		}
		return tx.Put([]byte("who"), []byte("incr"))
	})
}

// check fails the test unless n is want and incr's fn ran calls times.
func (r *unknownRig) check(want string, calls int64) {
	r.t.Helper()
	if got := r.get("n"); got != want {
		r.t.Errorf("n = %q, want %q", got, want)
	}
	if got := r.calls.Load(); got != calls {
		r.t.Errorf("fn ran %d times, want %d", got, calls)
	}
}

// unknownModes runs f with and without group commit.
func unknownModes(t *testing.T, f func(t *testing.T, o etcdkv.Options)) {
	t.Run("batch", func(t *testing.T) { f(t, etcdkv.Options{InFlight: 2}) })
	t.Run("nobatch", func(t *testing.T) { f(t, etcdkv.Options{NoBatch: true}) })
}

// TestUnknownOutcomeApplied: etcd applies the commit and its reply is
// lost with the connection. Update resolves the outcome (applied) and
// returns nil; the increment happened once.
func TestUnknownOutcomeApplied(t *testing.T) {
	unknownModes(t, func(t *testing.T, o etcdkv.Options) {
		r := newUnknownRig(t, o)
		r.onFirstCommit(func() {
			r.p.Mute()
			go func() { r.waitFor("n", "1"); r.p.Cut() }()
		})
		if err := r.incr(context.Background()); err != nil {
			t.Fatalf("Update: %v", err)
		}
		r.check("1", 1)
		if got := etcdkv.Resolved(r.s); got != 1 {
			t.Errorf("Resolved = %d, want 1", got)
		}
	})
}

// TestUnknownOutcomeAppliedThenOverwritten: as above, and another writer
// changes n before the store reconnects: the commit was applied (once),
// which Update finds in etcd's history, and fn does not run again.
func TestUnknownOutcomeAppliedThenOverwritten(t *testing.T) {
	unknownModes(t, func(t *testing.T, o etcdkv.Options) {
		r := newUnknownRig(t, o)
		r.onFirstCommit(func() {
			r.p.Mute()
			go func() { r.waitFor("n", "1"); r.put("n", "10"); r.p.Cut() }()
		})
		if err := r.incr(context.Background()); err != nil {
			t.Fatalf("Update: %v", err)
		}
		r.check("10", 1)
	})
}

// TestUnknownOutcomeNotSent: the commit never reaches etcd (the
// connection breaks with it). Update sends it again: applied once.
func TestUnknownOutcomeNotSent(t *testing.T) {
	unknownModes(t, func(t *testing.T, o etcdkv.Options) {
		r := newUnknownRig(t, o)
		r.onFirstCommit(r.p.Swallow)
		if err := r.incr(context.Background()); err != nil {
			t.Fatalf("Update: %v", err)
		}
		r.check("1", 1)
		if got := r.get("who"); got != "incr" {
			t.Errorf("who = %q, want incr", got)
		}
	})
}

// TestUnknownOutcomeConflict: the commit never reaches etcd and another
// writer changes n before the resend: the resend's compares fail, the
// commit was not applied, and fn runs again on the new value.
func TestUnknownOutcomeConflict(t *testing.T) {
	unknownModes(t, func(t *testing.T, o etcdkv.Options) {
		r := newUnknownRig(t, o)
		r.onFirstCommit(func() { r.put("n", "10"); r.p.Swallow() })
		if err := r.incr(context.Background()); err != nil {
			t.Fatalf("Update: %v", err)
		}
		r.check("11", 2)
	})
}

// TestUnknownOutcomeContextEnded: the context ends while the commit is
// in flight: Update cannot ask etcd any more and says the outcome is
// unknown (here it was applied).
func TestUnknownOutcomeContextEnded(t *testing.T) {
	unknownModes(t, func(t *testing.T, o etcdkv.Options) {
		r := newUnknownRig(t, o)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r.onFirstCommit(func() {
			r.p.Mute()
			go func() { r.waitFor("n", "1"); cancel(); r.p.Cut() }()
		})
		err := r.incr(ctx)
		if err == nil || !strings.Contains(err.Error(), "outcome unknown") {
			t.Fatalf("Update: %v, want an outcome unknown error", err)
		}
		r.check("1", 1)
	})
}

// TestUnknownOutcomeBlindWrite: an Update that wrote without reading
// has no compare that its own commit turns false, so a resend could
// apply it twice: its lost commit stays "outcome unknown".
func TestUnknownOutcomeBlindWrite(t *testing.T) {
	r := newUnknownRig(t, etcdkv.Options{NoBatch: true})
	r.onFirstCommit(r.p.Swallow)
	err := r.s.Update(context.Background(), func(tx kv.Txn) error { return tx.Put([]byte("who"), []byte("blind")) })
	if err == nil || !strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("Update: %v, want an outcome unknown error", err)
	}
}

// TestUnknownOutcomeLeaderKilled: writers increment counters of their own
// on three members while the leader is killed with SIGKILL. No Update
// fails (two members carry on) and every counter equals the increments
// acknowledged: none lost, none applied twice.
func TestUnknownOutcomeLeaderKilled(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s := openOn(t, etcdkv.Options{Endpoints: c.Endpoints(), Prefix: "/killed/"})
	ctx := context.Background()
	const writers, after = 4, 25
	var (
		wg     sync.WaitGroup
		killed atomic.Bool
		acked  [writers]atomic.Int64
		errs   = make(chan error, writers)
	)
	for w := range writers {
		key := []byte("c" + strconv.Itoa(w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			left := after
			for i := 0; left > 0 && i < 100000; i++ {
				err := s.Update(ctx, func(tx kv.Txn) error {
					v, ok, err := tx.Get(key)
					if err != nil {
						return err
					}
					n := 0
					if ok {
						if n, err = strconv.Atoi(string(v)); err != nil {
							return err
						}
					}
					return tx.Put(key, []byte(strconv.Itoa(n+1)))
				})
				if err != nil {
					errs <- fmt.Errorf("writer %d, increment %d: %w", w, i+1, err)
					return
				}
				acked[w].Add(1)
				if killed.Load() {
					left--
				}
			}
		}()
	}
	for min(acked[0].Load(), acked[1].Load(), acked[2].Load(), acked[3].Load()) < 5 && len(errs) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	t.Logf("killing the leader %s with SIGKILL", c.Members[leader].Name)
	c.Kill(leader)
	killed.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	err := s.View(ctx, func(tx kv.Txn) error {
		for w := range writers {
			v, _, err := tx.Get([]byte("c" + strconv.Itoa(w)))
			if err != nil {
				return err
			}
			if n := acked[w].Load(); string(v) != strconv.FormatInt(n, 10) {
				t.Errorf("counter %d = %s, want the %d increments acknowledged", w, v, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
