package meta_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/faultkv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// The meta service on a store that injects faults (package faultkv): its
// conflict and error paths run on every test run, not only when a real
// engine happens to conflict or fail.

// faultyService is a metatest factory over memkv wrapped with opts' faults
// (none while meta.New sets the store up).
func faultyService(opts faultkv.Options) (func(t *testing.T, o meta.Options) meta.API, func() *faultkv.Store) {
	var last *faultkv.Store
	return func(t *testing.T, o meta.Options) meta.API {
			inner := memkv.New()
			t.Cleanup(func() { inner.Close() })
			store := faultkv.New(inner, opts)
			store.Pause(true)
			s, err := meta.New(store, o)
			if err != nil {
				t.Fatal(err)
			}
			store.Pause(false)
			last = store
			return s
		}, func() *faultkv.Store {
			return last
		}
}

// TestConformanceConflicts: the whole conformance suite with a third of
// the transaction runs conflicting and run again. A conflict retried must
// be invisible: any state an operation keeps outside its transaction, or
// any effect of a run rolled back, shows as a failed case.
func TestConformanceConflicts(t *testing.T) {
	f, last := faultyService(faultkv.Options{Seed: 11, Conflict: 0.3})
	metatest.Run(t, f)
	if st := last().Stats(); st.Conflicts == 0 {
		t.Fatalf("no conflict injected: %+v", st)
	}
}

// TestConformanceViewReruns: the conformance suite with a third of the
// Views cut short at one of their first reads and run again (as etcdkv
// does when a snapshot is compacted away): what a View's function keeps
// across runs shows as a failed case.
func TestConformanceViewReruns(t *testing.T) {
	f, last := faultyService(faultkv.Options{Seed: 12, Rerun: 0.3})
	var views, reruns atomic.Int64
	metatest.Run(t, func(t *testing.T, o meta.Options) meta.API {
		api := f(t, o)
		store := last()
		t.Cleanup(func() {
			st := store.Stats()
			views.Add(int64(st.Views))
			reruns.Add(int64(st.Reruns))
		})
		return api
	})
	if reruns.Load() == 0 {
		t.Fatalf("no rerun injected in %d views", views.Load())
	}
	t.Logf("%d of %d views run again", reruns.Load(), views.Load())
}

// TestModelConflicts is the model-based random test with conflicts: every
// reference count and the namespace are compared with the model after
// each step.
func TestModelConflicts(t *testing.T) {
	seed := modelSeed(t)
	f, last := faultyService(faultkv.Options{Seed: seed, Conflict: 0.3})
	metatest.RunModel(t, f, seed, min(*stepsFlag, 1500))
	t.Logf("faults: %+v", last().Stats())
}

// TestModelFaults: operations whose transaction fails (an I/O error at
// commit, conflicts whose retries ran out) must fail cleanly: with ErrIO,
// and with nothing of the operation left behind. Each failed operation is
// done again with the faults paused; the model expects it done once, so a
// partial first attempt (an inode without its entry, a reference count
// moved by one of the operation's transactions and not the other) shows
// as a difference in the namespace, usage or reference counts.
func TestModelFaults(t *testing.T) {
	seed := modelSeed(t)
	f, last := faultyService(faultkv.Options{Seed: seed, Conflict: 0.2, Exhaust: 0.05, Fail: 0.15})
	var failed int
	metatest.RunModel(t, func(t *testing.T, o meta.Options) meta.API {
		s := f(t, o).(*meta.Service)
		return &retrying{Service: s, store: last(), t: t, failed: &failed}
	}, seed, min(*stepsFlag, 1500))
	st := last().Stats()
	t.Logf("faults: %+v; %d operations failed and were done again", st, failed)
	if failed == 0 || st.Failed == 0 || st.Exhausted == 0 {
		t.Fatalf("no operation failed by an injected fault: %+v", st)
	}
}

// retrying is a meta.Service whose namespace and commit operations, when
// failed by an injected fault, check the error and run again with the
// faults paused.
type retrying struct {
	*meta.Service
	store  *faultkv.Store
	t      *testing.T
	failed *int
}

func (r *retrying) again(err error, call func() error) error {
	if !errors.Is(err, faultkv.ErrInjected) && !errors.Is(err, kv.ErrConflict) {
		return err
	}
	if !errors.Is(err, meta.ErrIO) {
		r.t.Errorf("an injected store fault surfaced as %v; want it wrapped in ErrIO", err)
	}
	*r.failed++
	r.store.Pause(true)
	defer r.store.Pause(false)
	return call()
}

func (r *retrying) Create(ctx context.Context, req meta.CreateReq) (in meta.Inode, err error) {
	in, err = r.Service.Create(ctx, req)
	err = r.again(err, func() error { in, err = r.Service.Create(ctx, req); return err })
	return in, err
}

func (r *retrying) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (in meta.Inode, err error) {
	in, err = r.Service.Unlink(ctx, parent, name, reap)
	err = r.again(err, func() error { in, err = r.Service.Unlink(ctx, parent, name, reap); return err })
	return in, err
}

func (r *retrying) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	err := r.Service.Rmdir(ctx, parent, name)
	return r.again(err, func() error { return r.Service.Rmdir(ctx, parent, name) })
}

func (r *retrying) Rename(ctx context.Context, op meta.Ino, on string, np meta.Ino, nn string, flags uint32) (in meta.Inode, err error) {
	in, err = r.Service.Rename(ctx, op, on, np, nn, flags)
	err = r.again(err, func() error { in, err = r.Service.Rename(ctx, op, on, np, nn, flags); return err })
	return in, err
}

func (r *retrying) Link(ctx context.Context, ino, np meta.Ino, nn string) (in meta.Inode, err error) {
	in, err = r.Service.Link(ctx, ino, np, nn)
	err = r.again(err, func() error { in, err = r.Service.Link(ctx, ino, np, nn); return err })
	return in, err
}

func (r *retrying) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (in meta.Inode, err error) {
	in, err = r.Service.SetAttr(ctx, ino, req)
	err = r.again(err, func() error { in, err = r.Service.SetAttr(ctx, ino, req); return err })
	return in, err
}

func (r *retrying) Commit(ctx context.Context, req meta.CommitReq) (in meta.Inode, err error) {
	in, err = r.Service.Commit(ctx, req)
	err = r.again(err, func() error { in, err = r.Service.Commit(ctx, req); return err })
	return in, err
}

func (r *retrying) Reap(ctx context.Context, ino meta.Ino) error {
	err := r.Service.Reap(ctx, ino)
	return r.again(err, func() error { return r.Service.Reap(ctx, ino) })
}
