// Package metatest is the conformance suite for meta.API implementations:
// the in-process Service and the RPC client run the same cases. A test file
// supplies only a Factory:
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T, opts meta.Options) meta.API {
//			s, err := meta.New(memkv.New(), opts)
//			...
//			return s
//		})
//	}
//
// The factory must honour opts (the suite injects a clock and root
// ownership) and arrange its own cleanup with t.Cleanup. RunModel is a
// seeded model-based random test over the same factory.
package metatest

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/meta"
)

// Factory returns a fresh, empty API built with opts.
type Factory func(t *testing.T, opts meta.Options) meta.API

// Clock is a manual clock for meta.Options.Now and meta.Options.After.
type Clock struct {
	mu      sync.Mutex
	t       time.Time
	waiters []clockWaiter
}

// clockWaiter is a channel After returned, due at the given time.
type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Unix(1_800_000_000, 0)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d and returns the new time in unix ns.
func (c *Clock) Advance(d time.Duration) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.t) {
			keep = append(keep, w)
		} else {
			w.ch <- c.t
		}
	}
	c.waiters = keep
	return c.t.UnixNano()
}

// After returns a channel that receives the clock's time once Advance has
// moved it d or more past now (at once when d <= 0).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.t
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: c.t.Add(d), ch: ch})
	return ch
}

// Waiters returns how many After channels have not fired yet; a test waits
// for a goroutine to block on the clock by watching it grow.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// harness is one fresh API with its clock and helpers that fail the test.
type harness struct {
	t       *testing.T
	ctx     context.Context
	api     meta.API
	clock   *Clock
	factory Factory
}

// Root ownership the suite asks the factory for.
const (
	rootUid    = 1000
	rootGid    = 100
	rootPolicy = "posix"
	blockSize  = 64 << 10
)

func newHarness(t *testing.T, f Factory) *harness { return newHarnessOpts(t, f, nil) }

// newHarnessOpts is newHarness with the options changed by edit (if not nil).
func newHarnessOpts(t *testing.T, f Factory, edit func(*meta.Options)) *harness {
	c := NewClock()
	opts := meta.Options{RootUid: rootUid, RootGid: rootGid, RootMode: 0775, RootPolicy: rootPolicy,
		BlockSize: blockSize, Now: c.Now, After: c.After}
	if edit != nil {
		edit(&opts)
	}
	return &harness{t: t, ctx: context.Background(), api: f(t, opts), clock: c, factory: f}
}

// Run runs every conformance case against the factory's APIs.
func Run(t *testing.T, f Factory) {
	cases := []struct {
		name string
		fn   func(h *harness)
	}{
		{"Root", testRoot},
		{"Names", testNames},
		{"Create", testCreate},
		{"CreateSpecial", testCreateSpecial},
		{"Setgid", testSetgid},
		{"Lookup", testLookup},
		{"SetAttr", testSetAttr},
		{"Truncate", testTruncate},
		{"Link", testLink},
		{"Tmpfile", testTmpfile},
		{"UnlinkReap", testUnlinkReap},
		{"Rmdir", testRmdir},
		{"RenameErrors", testRenameErrors},
		{"RenameMoves", testRenameMoves},
		{"RenameExchange", testRenameExchange},
		{"ReadDir", testReadDir},
		{"Commit", testCommit},
		{"CommitConflict", testCommitConflict},
		{"CommitInline", testCommitInline},
		{"GetRecipe", testGetRecipe},
		{"Xattr", testXattr},
		{"StatFS", testStatFS},
		{"Servers", testServers},
		{"Membership", testMembership},
		{"Replicas", testReplicas},
		{"MoverProgress", testMoverProgress},
		{"WalkBlocks", testWalkBlocks},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(newHarness(t, f)) })
	}
	runSessions(t, f)
}

// wantErr fails unless err matches want (nil: no error).
func (h *harness) wantErr(what string, err error, want error) {
	h.t.Helper()
	switch {
	case want == nil && err != nil:
		h.t.Fatalf("%s: %v", what, err)
	case want != nil && !errors.Is(err, want):
		h.t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func (h *harness) create(parent meta.Ino, name string, mode uint32) meta.Inode {
	h.t.Helper()
	in, err := h.api.Create(h.ctx, meta.CreateReq{Parent: parent, Name: name, Mode: mode, Uid: 7, Gid: 8, Excl: true})
	if err != nil {
		h.t.Fatalf("create %d/%q: %v", parent, name, err)
	}
	return in
}

func (h *harness) file(parent meta.Ino, name string) meta.Inode {
	h.t.Helper()
	return h.create(parent, name, syscall.S_IFREG|0644)
}

func (h *harness) mkdir(parent meta.Ino, name string) meta.Inode {
	h.t.Helper()
	return h.create(parent, name, syscall.S_IFDIR|0755)
}

func (h *harness) attr(ino meta.Ino) meta.Inode {
	h.t.Helper()
	in, err := h.api.GetAttr(h.ctx, ino)
	if err != nil {
		h.t.Fatalf("getattr %d: %v", ino, err)
	}
	return in
}

func (h *harness) lookup(parent meta.Ino, name string) meta.Inode {
	h.t.Helper()
	in, err := h.api.Lookup(h.ctx, parent, name)
	if err != nil {
		h.t.Fatalf("lookup %d/%q: %v", parent, name, err)
	}
	return in
}

func (h *harness) names(dir meta.Ino) []string {
	h.t.Helper()
	var out []string
	after := ""
	for {
		ents, more, err := h.api.ReadDir(h.ctx, dir, after, 100, false)
		if err != nil {
			h.t.Fatalf("readdir %d: %v", dir, err)
		}
		for _, e := range ents {
			out = append(out, e.Name)
			after = e.Name
		}
		if !more {
			return out
		}
	}
}

func (h *harness) statfs() meta.StatFS {
	h.t.Helper()
	st, err := h.api.StatFS(h.ctx)
	if err != nil {
		h.t.Fatalf("statfs: %v", err)
	}
	return st
}

// eq fails when got != want.
func eq[T comparable](h *harness, what string, got, want T) {
	h.t.Helper()
	if got != want {
		h.t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
