package gateway_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"tessera/internal/gateway"
	"tessera/internal/meta"
)

// fakeClock is the Ingester's injected clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRevalidationAfterTheLag: a change at home is seen after the
// fileset's validity lag (one minute) and not before; only what changed is
// invalidated; a forced revalidation sees it at once.
func TestRevalidationAfterTheLag(t *testing.T) {
	clk := &fakeClock{t: time.Now()}
	e := newEnvWith(t, meta.ModeRO, gateway.Options{Now: clk.Now})
	ctx := context.Background()
	e.put(t, "f", []byte("version 1"))
	e.put(t, "g", []byte("unchanged"))
	if _, err := e.g.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	inos := map[string]meta.Ino{}
	for _, n := range []string{"f", "g"} {
		in, err := e.svc.Lookup(ctx, e.root, n)
		if err != nil {
			t.Fatal(err)
		}
		inos[n] = in.Ino
		if _, err := e.g.Fetch(ctx, in.Ino, 0, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	// Home changes: f's content and size, and a new name; mtimes moved
	// forward so that even a coarse clock sees them.
	v2 := []byte("version 2, longer")
	e.put(t, "f", v2)
	e.put(t, "h", []byte("new at home"))
	later := time.Now().Add(time.Hour)
	for _, n := range []string{"f", "h", "."} {
		if err := os.Chtimes(filepath.Join(e.home, n), later, later); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(30 * time.Second)
	for n, ino := range inos {
		if changed, err := e.g.Revalidate(ctx, ino, false); err != nil || changed {
			t.Errorf("%s within the lag: changed %v, %v; want nothing done", n, changed, err)
		}
	}
	if got := e.read(t, inos["f"]); !bytes.Equal(got, []byte("version 1")) {
		t.Errorf("f within the lag reads %q", got)
	}
	clk.Add(31 * time.Second)
	if changed, err := e.g.Revalidate(ctx, inos["g"], false); err != nil || changed {
		t.Errorf("g after the lag, unchanged at home: changed %v, %v", changed, err)
	}
	if g, _ := e.svc.GetAttr(ctx, inos["g"]); g.Gateway.State != meta.CacheCached {
		t.Errorf("g after revalidation: %v, want still cached", g.Gateway.State)
	}
	changed, err := e.g.Revalidate(ctx, inos["f"], false)
	if err != nil || !changed {
		t.Fatalf("f after the lag: changed %v, %v; want invalidated", changed, err)
	}
	f, _ := e.svc.GetAttr(ctx, inos["f"])
	if f.Gateway.State != meta.CachePlaceholder || f.Size != uint64(len(v2)) || f.Mtime != later.UnixNano() {
		t.Errorf("f invalidated: state %v size %d mtime %d", f.Gateway.State, f.Size, f.Mtime)
	}
	if _, err := e.g.Fetch(ctx, inos["f"], 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, inos["f"]); !bytes.Equal(got, v2) {
		t.Errorf("f after revalidation and fetch reads %q, want %q", got, v2)
	}
	// The directory: forced, at once.
	if changed, err := e.g.Revalidate(ctx, e.root, true); err != nil || !changed {
		t.Fatalf("forced revalidation of the root: changed %v, %v", changed, err)
	}
	if _, err := e.g.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	ents, _, err := e.svc.ReadDir(ctx, e.root, "", 10, false)
	var names []string
	for _, x := range ents {
		names = append(names, x.Name)
	}
	if err != nil || !slices.Equal(names, []string{"d", "f", "g", "h"}) {
		t.Errorf("root after relisting: %v, %v; want d f g h", names, err)
	}
}
