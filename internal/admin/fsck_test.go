package admin

import (
	"bytes"
	"context"
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
	n, err := Fsck(context.Background(), cl, &out)
	if err != nil || n != 0 {
		t.Fatalf("sound files: %d problems, %v:\n%s", n, err, out.String())
	}
	commitBlock(t, svc, st, "data-past-end", 0, []byte("0123456789"), 4)
	commitBlock(t, svc, st, "too-long", 0, bytes.Repeat([]byte{2}, bs+1), bs+1)
	out.Reset()
	n, err = Fsck(context.Background(), cl, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"data past the end of the 4-byte file", "65537 bytes in a block"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("fsck output lacks %q:\n%s", want, out.String())
		}
	}
	if n != 2 {
		t.Fatalf("%d problems; want 2:\n%s", n, out.String())
	}
}
