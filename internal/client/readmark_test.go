package client

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// markMeta records whether each GetRecipe and Lookup was allowed a
// serializable read.
type markMeta struct {
	meta.API
	mu     sync.Mutex
	recipe []bool
	lookup []bool
}

func (m *markMeta) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	m.mu.Lock()
	m.recipe = append(m.recipe, meta.SerializableAllowed(ctx))
	m.mu.Unlock()
	return m.API.GetRecipe(ctx, ino, first, count)
}

func (m *markMeta) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	m.mu.Lock()
	m.lookup = append(m.lookup, meta.SerializableAllowed(ctx))
	m.mu.Unlock()
	return m.API.Lookup(ctx, parent, name)
}

func (m *markMeta) take() (recipe, lookup []bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	recipe, lookup, m.recipe, m.lookup = m.recipe, m.lookup, nil, nil
	return recipe, lookup
}

// TestReadConsistencyByPolicy: the meta reads of a file read under session,
// nfs or relaxed carry the serializable mark; under posix, or through an
// O_RSYNC handle, they do not. The FUSE layer's namespace reads carry it
// when the mount's policy allows it, and not under a posix mount.
func TestReadConsistencyByPolicy(t *testing.T) {
	e := newEnv(t, 64<<10, 0)
	ctx := context.Background()
	data := make([]byte, 3*64<<10)
	rand.New(rand.NewSource(16)).Read(data)
	mm := &markMeta{API: e.api}
	st := e.store
	reader := func(pol string) *Client {
		return testClient(t, mm, map[string]block.Store{"b0": st}, Config{Policy: pol, MemCacheBytes: 64 << 10})
	}
	for i, c := range []struct {
		policy string
		flags  int
		want   bool
	}{
		{"session", syscall.O_RDONLY, true},
		{"nfs", syscall.O_RDONLY, true},
		{"relaxed", syscall.O_RDONLY, true},
		{"posix", syscall.O_RDONLY, false},
		{"session", syscall.O_RDONLY | syscall.O_RSYNC, false},
		{"nfs", syscall.O_RDONLY | syscall.O_SYNC, false},
	} {
		in := e.create(t, fmt.Sprintf("f%d", i))
		if err := e.api.SetXattr(ctx, in.Ino, meta.PolicyXattr, []byte(c.policy), 0); err != nil {
			t.Fatal(err)
		}
		if err := writeClose(ctx, e.c, in, data); err != nil {
			t.Fatal(err)
		}
		r := reader("")
		in, _ = e.api.GetAttr(ctx, in.Ino)
		mm.take()
		h, _, err := r.Open(ctx, in, c.flags)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Read(ctx, 0, make([]byte, len(data))); err != nil {
			t.Fatal(err)
		}
		h.Release(ctx)
		recipe, _ := mm.take()
		if len(recipe) == 0 {
			t.Fatalf("%s flags %#x: no recipe read", c.policy, c.flags)
		}
		for _, got := range recipe {
			if got != c.want {
				t.Fatalf("%s flags %#x: recipe reads serializable %v, want %v", c.policy, c.flags, recipe, c.want)
			}
		}
	}
	for _, c := range []struct {
		policy string
		want   bool
	}{{"session", true}, {"", true}, {"nfs", true}, {"posix", false}, {"seq-nocache", false}} {
		r := reader(c.policy)
		mm.take()
		if _, err := r.Meta().Lookup(ctx, meta.RootIno, "f0"); err != nil {
			t.Fatal(err)
		}
		if _, lookup := mm.take(); len(lookup) != 1 || lookup[0] != c.want {
			t.Fatalf("mount policy %q: lookups serializable %v, want [%v]", c.policy, lookup, c.want)
		}
	}
}
