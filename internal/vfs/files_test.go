package vfs

import (
	"bytes"
	"context"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// TestOpenChecksPermissionsForTheFlags: an open needs read permission for
// O_RDONLY, write for O_WRONLY and O_TRUNC, both for O_RDWR; a directory
// opened for writing is EISDIR.
func TestOpenChecksPermissionsForTheFlags(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o644)
	for _, tc := range []struct {
		c     Cred
		flags uint32
		want  syscall.Errno
	}{
		{bob, syscall.O_RDONLY, 0},
		{bob, syscall.O_WRONLY, syscall.EACCES},
		{bob, syscall.O_RDWR, syscall.EACCES},
		{bob, syscall.O_RDONLY | syscall.O_TRUNC, syscall.EACCES},
		{alice, syscall.O_RDWR, 0},
		{Root, syscall.O_RDWR, 0},
	} {
		o, err := v.OpenFile(ctx, tc.c, f.Ino, tc.flags)
		if tc.want != 0 {
			wantErrno(t, "open", err, tc.want)
			continue
		}
		if err != nil {
			t.Fatalf("open by uid %d with flags %#x: %v", tc.c.Uid, tc.flags, err)
		}
		if err := v.Release(ctx, o.Fh); err != nil {
			t.Fatal(err)
		}
	}
	secret := mk(t, v, alice, meta.RootIno, "secret", syscall.S_IFREG|0o600)
	_, err := v.OpenFile(ctx, bob, secret.Ino, syscall.O_RDONLY)
	wantErrno(t, "open of another's 0600 file", err, syscall.EACCES)
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o777)
	_, err = v.OpenFile(ctx, alice, d.Ino, syscall.O_RDWR)
	wantErrno(t, "open of a directory for writing", err, syscall.EISDIR)
	_, err = v.OpenFile(ctx, alice, d.Ino, syscall.O_RDONLY)
	wantErrno(t, "open of a directory as a file", err, syscall.EISDIR)
}

// TestCreateOpenRules: O_EXCL of an existing name is EEXIST; without it
// the existing file is opened with the checks of an open (search
// permission on the parent is enough); O_TRUNC empties an existing file;
// making a new name needs write permission on the parent.
func TestCreateOpenRules(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	req := meta.CreateReq{Parent: d.Ino, Name: "f", Mode: 0o666}
	o, err := v.CreateOpen(ctx, alice, req, syscall.O_RDWR|syscall.O_EXCL)
	if err != nil || !o.Created || o.Inode.Uid != alice.Uid {
		t.Fatalf("exclusive create: created=%v uid=%d err=%v", o.Created, o.Inode.Uid, err)
	}
	if _, err := o.File.Write(ctx, 0, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := v.Release(ctx, o.Fh); err != nil {
		t.Fatal(err)
	}
	_, err = v.CreateOpen(ctx, alice, req, syscall.O_RDWR|syscall.O_EXCL)
	wantErrno(t, "exclusive create of an existing name", err, syscall.EEXIST)
	// Bob may open alice's 0666 file in her 0755 directory (no write
	// permission on the directory is needed for an existing name) ...
	o, err = v.CreateOpen(ctx, bob, req, syscall.O_RDWR|syscall.O_TRUNC)
	if err != nil || o.Created {
		t.Fatalf("open of an existing 0666 file with O_CREAT|O_TRUNC by another: created=%v err=%v", o.Created, err)
	}
	if o.Inode.Size != 0 {
		t.Fatalf("size after O_TRUNC %d, want 0", o.Inode.Size)
	}
	v.Release(ctx, o.Fh)
	// ... but not make a new name there.
	_, err = v.CreateOpen(ctx, bob, meta.CreateReq{Parent: d.Ino, Name: "g", Mode: 0o666}, syscall.O_RDWR)
	wantErrno(t, "create in another's 0755 directory", err, syscall.EACCES)
}

// TestHandleIO: what a handle writes reads back through another; a write
// by a non-root caller clears the set-id bits; a handle released is gone.
func TestHandleIO(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o6777)
	w, err := v.OpenFile(ctx, bob, f.Ino, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("tessera "), 20000) // 160 kB: several 64 KiB blocks
	if n, err := w.File.Write(ctx, 0, data); err != nil || n != len(data) {
		t.Fatalf("write: %d, %v", n, err)
	}
	if err := w.File.Fsync(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := v.GetAttr(ctx, f.Ino); in.Mode&0o7777 != 0o777 {
		t.Fatalf("mode after bob's write %o, want 0777", in.Mode&0o7777)
	}
	r, err := v.OpenFile(ctx, alice, f.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)+10)
	n, err := r.File.Read(ctx, 0, got)
	if err != nil || !bytes.Equal(got[:n], data) {
		t.Fatalf("read back %d bytes (%v), want the %d written", n, err, len(data))
	}
	for _, o := range []Opened{w, r} {
		if err := v.Release(ctx, o.Fh); err != nil {
			t.Fatal(err)
		}
		if v.File(o.Fh) != nil {
			t.Fatalf("handle %d still open after its release", o.Fh)
		}
	}
}

// TestReadOnlyClientRefusesWriteOpens: with Options.ReadOnly an open that
// may write and a create get EROFS; a read open works.
func TestReadOnlyClientRefusesWriteOpens(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o644)
	v.opts.ReadOnly = true
	_, err := v.OpenFile(ctx, alice, f.Ino, syscall.O_RDWR)
	wantErrno(t, "write open on a read-only client", err, syscall.EROFS)
	_, err = v.OpenFile(ctx, alice, f.Ino, syscall.O_RDONLY|syscall.O_TRUNC)
	wantErrno(t, "O_TRUNC open on a read-only client", err, syscall.EROFS)
	_, err = v.CreateOpen(ctx, alice, meta.CreateReq{Parent: meta.RootIno, Name: "g", Mode: 0o644}, syscall.O_WRONLY)
	wantErrno(t, "create on a read-only client", err, syscall.EROFS)
	o, err := v.OpenFile(ctx, alice, f.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	v.Release(ctx, o.Fh)
}

// TestTmpfileAndAllocate: an O_TMPFILE inode is nameless and reaped at its
// release; fallocate grows a file, zeroes a range, refuses a handle not
// open for writing and the modes not supported.
func TestTmpfileAndAllocate(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	_, err := v.Tmpfile(ctx, bob, d.Ino, 0o600, syscall.O_RDWR)
	wantErrno(t, "tmpfile in another's 0755 directory", err, syscall.EACCES)
	o, err := v.Tmpfile(ctx, alice, d.Ino, 0o600, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if o.Inode.Nlink != 0 {
		t.Fatalf("tmpfile nlink %d, want 0", o.Inode.Nlink)
	}
	if _, err := o.File.Write(ctx, 0, bytes.Repeat([]byte{7}, 8192)); err != nil {
		t.Fatal(err)
	}
	if err := v.Allocate(ctx, o.Inode.Ino, o.Fh, 0, 0, 100000); err != nil {
		t.Fatalf("fallocate mode 0: %v", err)
	}
	if err := v.Allocate(ctx, o.Inode.Ino, o.Fh, FallocPunchHole|FallocKeepSize, 4096, 1<<20); err != nil {
		t.Fatalf("punch hole: %v", err)
	}
	buf := make([]byte, 8192)
	if n, err := o.File.Read(ctx, 0, buf); err != nil || n != 8192 {
		t.Fatalf("read: %d, %v", n, err)
	}
	if buf[4095] != 7 || buf[4096] != 0 || buf[8191] != 0 || o.File.Size() != 100000 {
		t.Fatalf("after punching [4096, end): bytes %d %d %d, size %d; want 7 0 0, 100000", buf[4095], buf[4096], buf[8191], o.File.Size())
	}
	err = v.Allocate(ctx, o.Inode.Ino, o.Fh, 0x08 /* COLLAPSE_RANGE */, 0, 4096)
	wantErrno(t, "collapse range", err, syscall.EOPNOTSUPP)
	err = v.Allocate(ctx, o.Inode.Ino, 9999, FallocZeroRange, 0, 4096)
	wantErrno(t, "zero range without a handle", err, syscall.EBADF)
	if err := v.Release(ctx, o.Fh); err != nil {
		t.Fatal(err)
	}
	if _, err := v.GetAttr(ctx, o.Inode.Ino); err == nil {
		t.Fatal("a released tmpfile is still there")
	}
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o666)
	r, err := v.OpenFile(ctx, bob, f.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release(ctx, r.Fh)
	err = v.Allocate(ctx, f.Ino, r.Fh, FallocZeroRange, 0, 4096)
	wantErrno(t, "zero range through a read-only handle", err, syscall.EBADF)
}

// TestTmpfileBlockSize: an unnamed file made with a block size of its own
// is written in blocks of that size (its recipe has one hash per such
// block) and reads back; its directory's block size is untouched.
func TestTmpfileBlockSize(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	const bs = 100000 // no power of two; the fixture's is 64 KiB
	o, err := v.TmpfileBlockSize(ctx, alice, d.Ino, 0o644, syscall.O_RDWR, bs)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release(ctx, o.Fh)
	if o.Inode.BlockSize != bs {
		t.Fatalf("block size %d, want %d", o.Inode.BlockSize, bs)
	}
	data := make([]byte, 2*bs+5)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := o.File.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := o.File.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := v.Client().Meta().GetRecipe(ctx, o.Inode.Ino, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Blocks) != 3 || r.Blocks[0] != block.Sum(data[:bs]) || r.Blocks[2] != block.Sum(data[2*bs:]) {
		t.Fatalf("recipe of %d blocks (want 3 of %d bytes)", len(r.Blocks), bs)
	}
	buf := make([]byte, len(data))
	if n, err := o.File.Read(ctx, 0, buf); err != nil || n != len(data) || !bytes.Equal(buf, data) {
		t.Fatalf("read back %d bytes, %v; equal %v", n, err, bytes.Equal(buf[:n], data[:n]))
	}
	if got, _ := v.GetAttr(ctx, d.Ino); got.BlockSize != 64<<10 {
		t.Fatalf("the directory's block size became %d", got.BlockSize)
	}
	_, err = v.TmpfileBlockSize(ctx, alice, d.Ino, 0o644, syscall.O_RDWR, 1000)
	wantErrno(t, "a block size under the minimum", err, syscall.EINVAL)
}
