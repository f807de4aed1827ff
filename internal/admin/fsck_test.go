package admin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// fsckEnv is a meta service over memkv with one disk block server.
func fsckEnv(t *testing.T) (*meta.Service, *disk.Store, *Cluster) {
	t.Helper()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := svc.RegisterServer(context.Background(), meta.Server{ID: "b0", Addr: "b0", State: meta.StateUp}); err != nil {
		t.Fatal(err)
	}
	return svc, st, &Cluster{Meta: svc, Dial: func(meta.Server) (BlockServer, error) { return st, nil }}
}

// commitBlock stores data and commits it as block idx of a new file name
// with the given size, bypassing the client (which never makes such
// recipes): fsck must judge what is in the store, not trust the writer.
func commitBlock(t *testing.T, svc *meta.Service, st *disk.Store, name string, idx uint64, data []byte, size uint64) {
	t.Helper()
	ctx := context.Background()
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: 0o100644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	h := block.Sum(data)
	if err := st.Put(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	// Not SetSize: the service trims a recipe at a size set exactly, but
	// keeps the larger of the sizes of writes.
	req := meta.CommitReq{Ino: in.Ino, Size: size, Forced: true,
		Changes: []meta.BlockChange{{Index: idx, New: h}}}
	if _, err := svc.Commit(ctx, req); err != nil {
		t.Fatal(err)
	}
}

// TestFsckImpossibleRecipes: fsck reports recipes whose content no sequence
// of writes and truncates makes (data past the end, a block longer than the
// file's block size) and passes sound files, sparse ones included. (A block
// wholly past the end is checked too, but the service trims those itself.)
func TestFsckImpossibleRecipes(t *testing.T) {
	svc, st, cl := fsckEnv(t)
	const bs = 64 << 10
	full := bytes.Repeat([]byte{1}, bs)
	commitBlock(t, svc, st, "sound", 0, full, bs)
	commitBlock(t, svc, st, "sparse", 3, []byte("tail"), 3*bs+4)
	commitBlock(t, svc, st, "zero-tail", 0, append([]byte("ab"), make([]byte, 10)...), 2)
	var out bytes.Buffer
	rep, err := Fsck(context.Background(), cl, &out, FsckOptions{})
	if n := rep.Problems(); err != nil || n != 0 {
		t.Fatalf("sound files: %d problems, %v:\n%s", n, err, out.String())
	}
	commitBlock(t, svc, st, "data-past-end", 0, []byte("0123456789"), 4)
	commitBlock(t, svc, st, "too-long", 0, bytes.Repeat([]byte{2}, bs+1), bs+1)
	out.Reset()
	rep, err = Fsck(context.Background(), cl, &out, FsckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := rep.Problems()
	for _, want := range []string{"data past the end of the 4-byte file", "65537 bytes in a block"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("fsck output lacks %q:\n%s", want, out.String())
		}
	}
	if n != 2 {
		t.Fatalf("%d problems; want 2:\n%s", n, out.String())
	}
}

// twoServers is a meta service with servers b0 and b1 and a file "f" of
// one 64 KiB block stored on both; it returns the block's hash and the
// file's inode.
func twoServers(t *testing.T) (*Cluster, map[string]*disk.Store, block.Hash, meta.Ino) {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]*disk.Store{}
	for _, id := range []string{"b0", "b1"} {
		st, err := disk.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[id] = st
		if _, err := svc.RegisterServer(ctx, meta.Server{ID: id, Addr: id, State: meta.StateUp}); err != nil {
			t.Fatal(err)
		}
	}
	data := bytes.Repeat([]byte("tessera!"), 8<<10)
	h := block.Sum(data)
	for _, st := range stores {
		if err := st.Put(ctx, h, data); err != nil {
			t.Fatal(err)
		}
	}
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Commit(ctx, meta.CommitReq{Ino: in.Ino, Size: uint64(len(data)), Forced: true,
		Changes: []meta.BlockChange{{Index: 0, New: h}}}); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Meta: svc, Dial: func(s meta.Server) (BlockServer, error) { return stores[s.ID], nil }}
	return c, stores, h, in.Ino
}

func corruptCopy(t *testing.T, st *disk.Store, h block.Hash) []byte {
	t.Helper()
	b, err := os.ReadFile(st.Path(h))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(st.Path(h), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFsckReadOnlyThenRepair: fsck finds a corrupt copy on the second
// server even though the first is good, changes nothing on disk without
// --repair, and with it moves the copy aside (kept in quarantine/).
// Before, fsck stopped at the first good copy and, reading with Get, moved
// any corrupt copy it met aside by itself.
func TestFsckReadOnlyThenRepair(t *testing.T) {
	ctx := context.Background()
	c, stores, h, ino := twoServers(t)
	bad := corruptCopy(t, stores["b1"], h)
	var out bytes.Buffer
	rep, err := Fsck(ctx, c, &out, FsckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corrupt != 1 || rep.Lost != 0 || rep.Quarantined != 0 || rep.Problems() != 1 {
		t.Fatalf("report %+v; want one corrupt copy:\n%s", rep, out.String())
	}
	for _, want := range []string{"on server b1: corrupt copy", fmt.Sprintf("inode %d block 0", ino), "--repair"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("fsck output lacks %q:\n%s", want, out.String())
		}
	}
	if got, err := os.ReadFile(stores["b1"].Path(h)); err != nil || !bytes.Equal(got, bad) {
		t.Fatalf("fsck without --repair changed b1's copy (%v)", err)
	}
	if q, _ := filepath.Glob(filepath.Join(stores["b1"].Dir(), "quarantine", "*")); len(q) != 0 {
		t.Fatalf("fsck without --repair quarantined %v", q)
	}

	out.Reset()
	rep, err = Fsck(ctx, c, &out, FsckOptions{Repair: true})
	if err != nil || rep.Quarantined != 1 {
		t.Fatalf("repair: %+v, %v:\n%s", rep, err, out.String())
	}
	if _, err := os.Stat(stores["b1"].Path(h)); !os.IsNotExist(err) {
		t.Fatalf("the corrupt copy is still in place after --repair (%v)", err)
	}
	q, _ := filepath.Glob(filepath.Join(stores["b1"].Dir(), "quarantine", h.String()+".*"))
	if len(q) != 1 {
		t.Fatalf("quarantine after --repair: %v", q)
	}
	if _, err := stores["b0"].Get(ctx, h); err != nil {
		t.Fatalf("the good copy on b0: %v", err)
	}
	out.Reset()
	if rep, err := Fsck(ctx, c, &out, FsckOptions{}); err != nil || rep.Problems() != 0 {
		t.Fatalf("after the repair: %+v, %v:\n%s", rep, err, out.String())
	}
}

// TestFsckLostBlockNamesFile: a block whose every copy is corrupt is
// reported lost, with the file (inode) it belongs to.
func TestFsckLostBlockNamesFile(t *testing.T) {
	c, stores, h, ino := twoServers(t)
	corruptCopy(t, stores["b0"], h)
	corruptCopy(t, stores["b1"], h)
	var out bytes.Buffer
	rep, err := Fsck(context.Background(), c, &out, FsckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lost != 1 || rep.Corrupt != 2 {
		t.Fatalf("report %+v; want the block lost with 2 corrupt copies:\n%s", rep, out.String())
	}
	want := fmt.Sprintf("block %s: LOST: every copy is corrupt (on b0, b1); files: inode %d block 0", h, ino)
	if !strings.Contains(out.String(), want) {
		t.Fatalf("fsck output lacks %q:\n%s", want, out.String())
	}
}
