package gateway_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"tessera/internal/gateway"
	"tessera/internal/gateway/home"
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

// callCountingHome counts the calls a gateway makes of its home, by kind; it
// is a home.KindStater whatever the store under it is.
type callCountingHome struct {
	home.Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCountingHome) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

// take returns the counts since the last take.
func (c *callCountingHome) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.calls
	c.calls = map[string]int{}
	return m
}

func (c *callCountingHome) Stat(ctx context.Context, p string) (home.Attr, error) {
	c.count("Stat")
	return c.Store.Stat(ctx, p)
}

func (c *callCountingHome) StatKind(ctx context.Context, p string, was home.Kind) (home.Attr, error) {
	c.count("StatKind " + was.String())
	return c.Store.Stat(ctx, p)
}

func (c *callCountingHome) ReadDir(ctx context.Context, p string) ([]home.Attr, error) {
	c.count("ReadDir")
	return c.Store.ReadDir(ctx, p)
}

func (c *callCountingHome) ReadAt(ctx context.Context, p string, b []byte, off int64) (int, error) {
	c.count("ReadAt")
	return c.Store.ReadAt(ctx, p, b, off)
}

// TestRevalidationOfUnchangedAsksHomeOnce: after the lag, an unchanged
// file costs one question to home (one round trip over a WAN) and an
// unchanged directory one question asked as of a directory (on s3://,
// its marker: one request, not a missing file's first); nothing is
// invalidated (same change counter, state, cached runs and recipe, and
// no read of home afterwards). Within the lag nothing is asked.
func TestRevalidationOfUnchangedAsksHomeOnce(t *testing.T) {
	clk := &fakeClock{t: time.Now()}
	ch := &callCountingHome{calls: map[string]int{}}
	e := newEnvWith(t, meta.ModeRO, gateway.Options{Now: clk.Now, Open: func(ctx context.Context, url string) (home.Store, error) {
		st, err := home.Open(ctx, url)
		ch.Store = st
		return ch, err
	}})
	ctx := context.Background()
	data := randBytes(300<<10, 7)
	e.put(t, "f", data)
	if _, err := e.g.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	f, err := e.svc.Lookup(ctx, e.root, "f")
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.svc.Lookup(ctx, e.root, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.ListDir(ctx, d.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Fetch(ctx, f.Ino, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	before, err := e.svc.GetAttr(ctx, f.Ino)
	if err != nil || before.Gateway.State != meta.CacheCached {
		t.Fatalf("f after the fetch: %+v, %v", before.Gateway, err)
	}
	rb, err := e.svc.GetRecipe(ctx, f.Ino, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	ch.take()
	clk.Add(30 * time.Second)
	for _, ino := range []meta.Ino{f.Ino, d.Ino} {
		if changed, err := e.g.Revalidate(ctx, ino, false); err != nil || changed {
			t.Fatalf("inode %d within the lag: changed %v, %v", ino, changed, err)
		}
	}
	if got := ch.take(); len(got) != 0 {
		t.Errorf("within the lag home was asked %v; want nothing", got)
	}
	clk.Add(31 * time.Second)
	if changed, err := e.g.Revalidate(ctx, f.Ino, false); err != nil || changed {
		t.Fatalf("f after the lag, unchanged: changed %v, %v", changed, err)
	}
	if got := ch.take(); !reflect.DeepEqual(got, map[string]int{"Stat": 1}) {
		t.Errorf("revalidating unchanged file f asked home %v; want one Stat", got)
	}
	if changed, err := e.g.Revalidate(ctx, d.Ino, false); err != nil || changed {
		t.Fatalf("d after the lag, unchanged: changed %v, %v", changed, err)
	}
	if got := ch.take(); !reflect.DeepEqual(got, map[string]int{"StatKind dir": 1}) {
		t.Errorf("revalidating unchanged directory d asked home %v; want one StatKind of a dir", got)
	}
	after, err := e.svc.GetAttr(ctx, f.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if after.Change != before.Change || after.Size != before.Size || after.Gateway.State != meta.CacheCached ||
		!reflect.DeepEqual(after.Gateway.Cached, before.Gateway.Cached) || after.Gateway.Validated <= before.Gateway.Validated {
		t.Errorf("f revalidated unchanged: change %d->%d, size %d->%d, state %v, runs %v->%v, validated %d->%d",
			before.Change, after.Change, before.Size, after.Size, after.Gateway.State,
			before.Gateway.Cached, after.Gateway.Cached, before.Gateway.Validated, after.Gateway.Validated)
	}
	if ra, err := e.svc.GetRecipe(ctx, f.Ino, 0, 100); err != nil || !reflect.DeepEqual(ra, rb) {
		t.Errorf("f's recipe after revalidation: %+v, %v; was %+v", ra, err, rb)
	}
	if got := e.read(t, f.Ino); !bytes.Equal(got, data) {
		t.Errorf("f after revalidation reads %d bytes, not what was cached", len(got))
	}
	if got := ch.take(); len(got) != 0 {
		t.Errorf("reading f after its revalidation asked home %v; want nothing", got)
	}
}
