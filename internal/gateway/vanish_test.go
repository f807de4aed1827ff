package gateway_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"tessera/internal/gateway"
	"tessera/internal/meta"
)

// vanishEnv is an env on the injected clock whose home holds the named
// files (content: the name) and directory d with file d/y, all listed
// and fetched into the cache; it returns the inodes by path.
func vanishEnv(t *testing.T, mode meta.FilesetMode, files ...string) (*env, *fakeClock, map[string]meta.Ino) {
	t.Helper()
	clk := &fakeClock{t: time.Now()}
	e := newEnvWith(t, mode, gateway.Options{Now: clk.Now})
	ctx := context.Background()
	for _, n := range append(files, "d/y") {
		e.put(t, n, []byte("home's "+n))
	}
	if _, err := e.g.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	inos := map[string]meta.Ino{}
	for _, n := range append(files, "d") {
		in, err := e.svc.Lookup(ctx, e.root, n)
		if err != nil {
			t.Fatal(err)
		}
		inos[n] = in.Ino
	}
	if _, err := e.g.ListDir(ctx, inos["d"]); err != nil {
		t.Fatal(err)
	}
	y, err := e.svc.Lookup(ctx, inos["d"], "y")
	if err != nil {
		t.Fatal(err)
	}
	inos["d/y"] = y.Ino
	for _, n := range append(files, "d/y") {
		if _, err := e.g.Fetch(ctx, inos[n], 0, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	return e, clk, inos
}

// goneAtHome removes paths at home and moves the mtimes of what holds
// them on, so that even a coarse clock shows the directories changed.
func goneAtHome(t *testing.T, e *env, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.RemoveAll(filepath.Join(e.home, p)); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(time.Hour)
	for _, d := range []string{".", "d"} {
		if err := os.Chtimes(filepath.Join(e.home, d), later, later); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func cachedNames(t *testing.T, e *env, dir meta.Ino) []string {
	t.Helper()
	ents, _, err := e.svc.ReadDir(context.Background(), dir, "", 100, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range ents {
		out = append(out, x.Name)
	}
	return out
}

// TestRevalidationDropsNamesGoneAtHomeRO: in a read-only fileset, the
// names home removed (a file, and a directory with its file) leave the
// cache when the directory is revalidated after the validity lag, not
// before; a file held open meanwhile still reads, as an orphan.
func TestRevalidationDropsNamesGoneAtHomeRO(t *testing.T) {
	e, clk, inos := vanishEnv(t, meta.ModeRO, "f", "g")
	ctx := context.Background()
	gIn, err := e.svc.GetAttr(ctx, inos["g"])
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := e.data.Open(ctx, gIn, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)

	goneAtHome(t, e, "g", "d")
	clk.Add(30 * time.Second)
	if changed, err := e.g.Revalidate(ctx, e.root, false); err != nil || changed {
		t.Fatalf("within the lag: changed %v, %v", changed, err)
	}
	if got := cachedNames(t, e, e.root); !slices.Equal(got, []string{"d", "f", "g"}) {
		t.Errorf("within the lag the cache lists %v, want d f g", got)
	}
	clk.Add(31 * time.Second)
	if changed, err := e.g.Revalidate(ctx, e.root, false); err != nil || !changed {
		t.Fatalf("after the lag: changed %v, %v", changed, err)
	}
	if got := cachedNames(t, e, e.root); !slices.Equal(got, []string{"f"}) {
		t.Errorf("after the lag the cache lists %v, want f", got)
	}
	if got := e.read(t, inos["f"]); !bytes.Equal(got, []byte("home's f")) {
		t.Errorf("f reads %q", got)
	}
	buf := make([]byte, 64)
	n, err := h.Read(ctx, 0, buf)
	if err != nil || string(buf[:n]) != "home's g" {
		t.Errorf("g, open while removed, reads %q, %v", buf[:n], err)
	}
	if in, err := e.svc.GetAttr(ctx, inos["g"]); err != nil || in.Nlink != 0 {
		t.Errorf("g after removal: nlink %d, %v; want an orphan", in.Nlink, err)
	}
}

// TestRevalidationKeepsDirtyNames: in an independent-writer fileset a
// name home removed stays while it has queued write-back; in a
// local-update fileset (nothing queued) a file changed locally, a name
// made locally and a directory holding one stay, while the clean names
// around them go.
func TestRevalidationKeepsDirtyNames(t *testing.T) {
	ctx := context.Background()
	t.Run("iw", func(t *testing.T) {
		e, _, inos := vanishEnv(t, meta.ModeIW, "a", "b", "c")
		// A local change of b: queued for write-back.
		if _, err := e.svc.SetAttr(ctx, inos["b"], meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); err != nil {
			t.Fatal(err)
		}
		goneAtHome(t, e, "a", "b")
		// The forced walk (tessera fileset revalidate) meets a and b,
		// gone at home, after their directory: not an error.
		if _, _, err := e.g.RevalidateTree(ctx, e.root); err != nil {
			t.Fatal(err)
		}
		if got := cachedNames(t, e, e.root); !slices.Equal(got, []string{"b", "c", "d"}) {
			t.Errorf("the cache lists %v, want b c d (a gone, b queued)", got)
		}
	})
	t.Run("lu", func(t *testing.T) {
		e, clk, inos := vanishEnv(t, meta.ModeLU, "a", "b", "c")
		if _, err := e.svc.SetAttr(ctx, inos["b"], meta.SetAttrReq{Valid: meta.SetSize, Size: 3}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			dir  meta.Ino
			name string
		}{{e.root, "n"}, {inos["d"], "local"}} {
			if _, err := e.svc.Create(ctx, meta.CreateReq{Parent: p.dir, Name: p.name, Mode: syscall.S_IFREG | 0o644, Excl: true}); err != nil {
				t.Fatal(err)
			}
		}
		goneAtHome(t, e, "a", "b", "d")
		clk.Add(2 * time.Minute)
		if _, err := e.g.Revalidate(ctx, e.root, false); err != nil {
			t.Fatal(err)
		}
		if got := cachedNames(t, e, e.root); !slices.Equal(got, []string{"b", "c", "d", "n"}) {
			t.Errorf("the cache lists %v, want b c d n (a gone; b changed, n made locally, d holds a local file)", got)
		}
		if got := cachedNames(t, e, inos["d"]); !slices.Equal(got, []string{"local"}) {
			t.Errorf("d lists %v, want local (y was clean)", got)
		}
	})
}
