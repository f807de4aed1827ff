package gateway_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"tessera/internal/gateway"
	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// changingHome runs change once, before the first read: home's object
// changes while a fetch reads it.
type changingHome struct {
	home.Store
	once   *sync.Once
	change func()
}

func (c changingHome) ReadAt(ctx context.Context, path string, p []byte, off int64) (int, error) {
	c.once.Do(c.change)
	return c.Store.ReadAt(ctx, path, p, off)
}

// TestFetchErrorSaysFetchOnce: a Fetch whose recording fails (home's
// object changed during it) says "fetch inode N" once, not twice.
func TestFetchErrorSaysFetchOnce(t *testing.T) {
	var e *env
	var ino meta.Ino
	once := new(sync.Once)
	e = newEnvWith(t, meta.ModeRO, gateway.Options{Open: func(ctx context.Context, url string) (home.Store, error) {
		st, err := home.Open(ctx, url)
		return changingHome{Store: st, once: once, change: func() {
			in, err := e.svc.GetAttr(ctx, ino)
			if err != nil {
				t.Error(err)
				return
			}
			g := *in.Gateway
			g.Token = "changed at home"
			if _, err := e.svc.SetGateway(meta.WithoutWriteback(ctx), ino, g, 0); err != nil {
				t.Error(err)
			}
		}}, err
	}})
	ctx := context.Background()
	e.put(t, "f", randBytes(300<<10, 1))
	root, err := e.g.ListDir(ctx, e.root)
	if err != nil {
		t.Fatal(err)
	}
	in, err := e.svc.Lookup(ctx, root.Ino, "f")
	if err != nil {
		t.Fatal(err)
	}
	ino = in.Ino
	_, err = e.g.Fetch(ctx, ino, 0, 300<<10)
	if !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("fetch with home changed during it: %v, want ErrConflict", err)
	}
	if n := strings.Count(err.Error(), "fetch inode"); n != 1 {
		t.Fatalf("error %q says \"fetch inode\" %d times, want once", err, n)
	}
}
