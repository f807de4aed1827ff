package authz_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/kv/memkv"
	"tessera/internal/logtest"
	"tessera/internal/meta"
	"tessera/internal/meta/authz"
)

// Identities the tests call with.
var (
	admin    = auth.Identity{Name: "alice", Role: auth.RoleAdmin, Via: "cert"}
	rw       = auth.Identity{Name: "mount-rw", Role: auth.RoleClientRW, Via: "cert"}
	ro       = auth.Identity{Name: "mount-ro", Role: auth.RoleClientRO, Via: "cert"}
	blockdB1 = auth.Identity{Name: "b1", Role: auth.RoleBlockd, Via: "cert"}
	projRW   = auth.Identity{Name: "proj-mount", Role: auth.RoleClientRW, Root: "/proj", Via: "cert"}
)

// fixture is a real meta.Service on the in-memory engine behind the
// decorator, with a log and a clock the test controls.
type fixture struct {
	t   *testing.T
	svc *meta.Service
	a   *authz.Authorizer
	log *logtest.Buffer

	mu  sync.Mutex
	now time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	svc, err := meta.New(store, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, svc: svc, log: &logtest.Buffer{}, now: time.Unix(1_800_000_000, 0)}
	f.a = authz.Wrap(svc, authz.Options{
		Log: slog.New(slog.NewTextHandler(f.log, nil)),
		Now: f.clock,
	})
	return f
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// as returns a context carrying id.
func as(id auth.Identity) context.Context {
	return auth.NewContext(context.Background(), id)
}

// mk creates parent/name directly on the service (unauthorized setup).
func (f *fixture) mk(parent meta.Ino, name string, mode uint32) meta.Ino {
	f.t.Helper()
	in, err := f.svc.Create(context.Background(), meta.CreateReq{Parent: parent, Name: name, Mode: mode, Excl: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return in.Ino
}

// denied fails the test unless err is a refusal a mount shows as EACCES.
func denied(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, auth.ErrDenied) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("%s: %v; want a refusal (auth.ErrDenied and EACCES)", what, err)
	}
}

// allowed fails the test when err is a refusal.
func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if errors.Is(err, auth.ErrDenied) || errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("%s: refused: %v", what, err)
	}
}

const (
	dirMode  = syscall.S_IFDIR | 0755
	fileMode = syscall.S_IFREG | 0644
)
