package writeback_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/gateway/home"
	"tessera/internal/gateway/writeback"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// The tests run the real meta service (in process, on the in-memory kv
// engine) and a real file:// home in a temporary directory. Content is
// kept inline in the inode (files of at most meta.InlineMax bytes), so
// metaSource reads it from the service without block servers; the client
// library's source (ClientSource) is the gateway's.

type metaSource struct{ s *meta.Service }

func (m metaSource) Open(ctx context.Context, ino meta.Ino) (io.ReadCloser, int64, error) {
	in, err := m.s.GetAttr(ctx, ino)
	if err != nil {
		return nil, 0, err
	}
	if !in.IsRegular() {
		return nil, 0, fmt.Errorf("inode %d is not a file: %w", ino, meta.ErrInvalid)
	}
	data := append([]byte(nil), in.Inline...)
	if n := int(in.Size); n < len(data) {
		data = data[:n]
	} else {
		data = append(data, make([]byte, n-len(data))...)
	}
	return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
}

// switchHome is a file:// home that can be cut off: while down every call
// fails as an unreachable home does (retryable).
type switchHome struct {
	home.Store
	down atomic.Bool
}

func (h *switchHome) fail(op, p string) error {
	if h.down.Load() {
		return &home.Error{Op: op, Path: p, Err: home.ErrUnavailable, Retry: true}
	}
	return nil
}

func (h *switchHome) Stat(ctx context.Context, p string) (home.Attr, error) {
	if err := h.fail("stat", p); err != nil {
		return home.Attr{}, err
	}
	return h.Store.Stat(ctx, p)
}

func (h *switchHome) WriteFile(ctx context.Context, p string, r io.Reader, size int64, mode uint32) (home.Attr, error) {
	if err := h.fail("write", p); err != nil {
		return home.Attr{}, err
	}
	return h.Store.WriteFile(ctx, p, r, size, mode)
}

func (h *switchHome) Mkdir(ctx context.Context, p string, mode uint32) error {
	if err := h.fail("mkdir", p); err != nil {
		return err
	}
	return h.Store.Mkdir(ctx, p, mode)
}

func (h *switchHome) Remove(ctx context.Context, p string) error {
	if err := h.fail("remove", p); err != nil {
		return err
	}
	return h.Store.Remove(ctx, p)
}

func (h *switchHome) Rmdir(ctx context.Context, p string) error {
	if err := h.fail("rmdir", p); err != nil {
		return err
	}
	return h.Store.Rmdir(ctx, p)
}

func (h *switchHome) Rename(ctx context.Context, from, to string) error {
	if err := h.fail("rename", from); err != nil {
		return err
	}
	return h.Store.Rename(ctx, from, to)
}

func (h *switchHome) Symlink(ctx context.Context, target, p string) error {
	if err := h.fail("symlink", p); err != nil {
		return err
	}
	return h.Store.(home.Symlinker).Symlink(ctx, target, p)
}

func (h *switchHome) Readlink(ctx context.Context, p string) (string, error) {
	if err := h.fail("readlink", p); err != nil {
		return "", err
	}
	return h.Store.(home.Symlinker).Readlink(ctx, p)
}

func (h *switchHome) Chmod(ctx context.Context, p string, mode uint32) error {
	if err := h.fail("chmod", p); err != nil {
		return err
	}
	return h.Store.(home.Setattrer).Chmod(ctx, p, mode)
}

func (h *switchHome) Chtimes(ctx context.Context, p string, a, m time.Time) error {
	if err := h.fail("chtimes", p); err != nil {
		return err
	}
	return h.Store.(home.Setattrer).Chtimes(ctx, p, a, m)
}

type env struct {
	t       *testing.T
	ctx     context.Context
	s       *meta.Service
	clock   *metatest.Clock
	root    meta.Ino
	homeDir string
	home    *switchHome
}

func newEnv(t *testing.T, policy string) *env {
	t.Helper()
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	clock := metatest.NewClock()
	s, err := meta.New(store, meta.Options{Now: clock.Now, After: clock.After})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in, err := s.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "fs", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := s.CreateFileset(ctx, meta.Fileset{Root: in.Ino, Home: "file://" + dir, Mode: meta.ModeSW, Conflicts: policy}); err != nil {
		t.Fatal(err)
	}
	fs, err := home.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return &env{t: t, ctx: ctx, s: s, clock: clock, root: in.Ino, homeDir: dir, home: &switchHome{Store: fs}}
}

func (e *env) fileset() writeback.Fileset {
	return writeback.Fileset{Root: e.root, Home: e.home, Conflicts: meta.ConflictsCacheWins}
}

func (e *env) applier(owner string, shard, shards int) *writeback.Applier {
	e.t.Helper()
	a, err := writeback.New(writeback.Config{Queue: e.s, Source: metaSource{e.s}, Owner: owner,
		Shard: shard, Shards: shards, TTL: time.Minute, Backoff: time.Second, MaxBackoff: 8 * time.Second, Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// wait moves the injected clock past any backoff or lease instead of
// sleeping.
func (e *env) wait(context.Context) error {
	e.clock.Advance(2 * time.Minute)
	return nil
}

// drain applies the whole queue and fails on anything failed for good.
func (e *env) drain(a *writeback.Applier, f writeback.Fileset) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Minute)
	defer cancel()
	if err := a.Drain(ctx, f, e.wait, nil); err != nil {
		e.t.Fatal(err)
	}
	st, err := e.s.WritebackStats(e.ctx, e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, op := range st.Failed {
		e.t.Errorf("failed for good: %v %q %q: %s", op.Kind, op.Path, op.Path2, op.Err)
	}
	if st.Depth != 0 {
		e.t.Fatalf("queue depth %d after the drain", st.Depth)
	}
}

// write sets file ino's content (inline).
func (e *env) write(ino meta.Ino, data []byte) {
	e.t.Helper()
	c := meta.BlockChange{Index: 0, InlineNew: true, NewInline: data}
	if _, err := e.s.Commit(e.ctx, meta.CommitReq{Ino: ino, Changes: []meta.BlockChange{c}, Size: uint64(len(data)), SetSize: true, Forced: true}); err != nil {
		e.t.Fatal(err)
	}
}

// cacheTree lists the fileset in the cache: path -> "d", "l:TARGET" or
// the file's content.
func (e *env) cacheTree() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	var walk func(dir meta.Ino, p string)
	walk = func(dir meta.Ino, p string) {
		after := ""
		for {
			ents, more, err := e.s.ReadDir(e.ctx, dir, after, 1000, true)
			if err != nil {
				e.t.Fatal(err)
			}
			for _, d := range ents {
				after = d.Name
				q := filepath.Join(p, d.Name)
				switch {
				case d.Inode.IsDir():
					out[q] = "d"
					walk(d.Ino, q)
				case d.Inode.Mode&syscall.S_IFMT == syscall.S_IFLNK:
					out[q] = "l:" + d.Inode.Target
				default:
					r, _, err := metaSource{e.s}.Open(e.ctx, d.Ino)
					if err != nil {
						e.t.Fatal(err)
					}
					b, _ := io.ReadAll(r)
					out[q] = string(b)
				}
			}
			if !more {
				return
			}
		}
	}
	walk(e.root, "")
	return out
}

// homeTree lists the home directory the same way (".conflicts" aside).
func (e *env) homeTree() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	err := filepath.Walk(e.homeDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.homeDir, p)
		switch {
		case rel == ".":
		case rel == ".conflicts":
			return filepath.SkipDir
		case fi.IsDir():
			out[rel] = "d"
		case fi.Mode()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "l:" + t
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) sameTrees() {
	e.t.Helper()
	c, h := e.cacheTree(), e.homeTree()
	var diffs []string
	for p, v := range c {
		if hv, ok := h[p]; !ok {
			diffs = append(diffs, "missing at home: "+p)
		} else if hv != v {
			diffs = append(diffs, fmt.Sprintf("differs: %s (cache %d bytes, home %d bytes)", p, len(v), len(hv)))
		}
	}
	for p := range h {
		if _, ok := c[p]; !ok {
			diffs = append(diffs, "only at home: "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = diffs[:20]
		}
		e.t.Fatalf("home tree != cache tree (%d cache entries, %d home):\n%v", len(c), len(h), diffs)
	}
}
