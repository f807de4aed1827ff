package vfs

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/client"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// newFS is a vfs over a real meta service (in memory) whose root is
// 01777 (sticky, writable by all), and a client.
func newFS(t *testing.T) *FS {
	t.Helper()
	v, _ := newFSWith(t, Options{}, "")
	return v
}

// newMetaSvc is a meta service in memory with one block server ("b0",
// which the tests' dialers answer) and a root every user may write in.
func newMetaSvc(t *testing.T) *meta.Service {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetAttr(ctx, meta.RootIno, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o1777}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// newFSWith is newFS with opts and the client's default policy; it
// returns the meta service too.
func newFSWith(t *testing.T, opts Options, policy string) (*FS, *meta.Service) {
	t.Helper()
	ctx := context.Background()
	svc := newMetaSvc(t)
	st := blocktest.NewMem()
	c, err := client.New(ctx, client.Config{
		Meta:   svc,
		Dial:   func(meta.Server) (block.Store, error) { return st, nil },
		Logger: slog.New(slog.DiscardHandler),
		Policy: policy,
	})
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	v := New(c, opts)
	t.Cleanup(func() {
		v.Close()
		c.Close(context.Background())
	})
	return v, svc
}

var (
	alice = Cred{Uid: 1000, Gid: 1000}
	bob   = Cred{Uid: 1001, Gid: 1001}
	// carol is in alice's group through a supplementary group only.
	carol = Cred{Uid: 1002, Gid: 1002, Groups: []uint32{50, 1000}}
)

func mk(t *testing.T, v *FS, c Cred, parent meta.Ino, name string, mode uint32) meta.Inode {
	t.Helper()
	in, err := v.Create(context.Background(), c, meta.CreateReq{Parent: parent, Name: name, Mode: mode, Excl: true})
	if err != nil {
		t.Fatalf("create %s as uid %d: %v", name, c.Uid, err)
	}
	return in
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func TestPermitsClasses(t *testing.T) {
	a := &meta.Attr{Ino: 9, Mode: syscall.S_IFREG | 0o640, Uid: 1000, Gid: 1000}
	for _, tc := range []struct {
		name string
		c    Cred
		mask uint32
		want bool
	}{
		{"owner reads", alice, MayRead, true},
		{"owner writes", alice, MayWrite, true},
		{"owner may not execute", alice, MayExec, false},
		{"group member by supplementary group reads", carol, MayRead, true},
		{"group member may not write", carol, MayWrite, false},
		{"other may not read", bob, MayRead, false},
		{"root reads and writes", Root, MayRead | MayWrite, true},
		{"root may not execute without any x bit", Root, MayExec, false},
		{"checked caller passes", Cred{Uid: 1001, Checked: true}, MayWrite, true},
	} {
		if got := Permits(tc.c, a, tc.mask); got != tc.want {
			t.Errorf("%s: Permits = %v, want %v", tc.name, got, tc.want)
		}
	}
	// The owner class decides even when the group or others have more.
	b := &meta.Attr{Mode: syscall.S_IFREG | 0o077, Uid: 1000, Gid: 1000}
	if Permits(alice, b, MayRead) {
		t.Error("owner with mode 077 may read; POSIX says the owner's bits decide")
	}
}

func TestCreateNeedsWriteOnParent(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	_, err := v.Create(ctx, bob, meta.CreateReq{Parent: d.Ino, Name: "x", Mode: syscall.S_IFREG | 0o644, Excl: true})
	wantErrno(t, "create in another's 0755 directory", err, syscall.EACCES)
	f := mk(t, v, alice, d.Ino, "f", syscall.S_IFREG|0o644)
	if f.Uid != alice.Uid || f.Gid != alice.Gid {
		t.Fatalf("new file owned by %d:%d, want the caller's 1000:1000", f.Uid, f.Gid)
	}
	// Search permission on the directory is needed to look a name up.
	p := mk(t, v, alice, meta.RootIno, "private", syscall.S_IFDIR|0o700)
	mk(t, v, alice, p.Ino, "secret", syscall.S_IFREG|0o644)
	_, err = v.Lookup(ctx, bob, p.Ino, "secret")
	wantErrno(t, "lookup in a 0700 directory of another", err, syscall.EACCES)
	_, _, err = v.ReadDir(ctx, bob, p.Ino, "", 10, false)
	wantErrno(t, "readdir of a 0700 directory of another", err, syscall.EACCES)
	if _, err := v.Lookup(ctx, alice, p.Ino, "secret"); err != nil {
		t.Fatalf("owner's lookup: %v", err)
	}
}

func TestSupplementaryGroupGrantsWrite(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "shared", syscall.S_IFDIR|0o775)
	if _, err := v.Create(ctx, carol, meta.CreateReq{Parent: d.Ino, Name: "c", Mode: syscall.S_IFREG | 0o644, Excl: true}); err != nil {
		t.Fatalf("carol (group 1000 as a supplementary group) creating in a 0775 directory of group 1000: %v", err)
	}
	_, err := v.Create(ctx, bob, meta.CreateReq{Parent: d.Ino, Name: "b", Mode: syscall.S_IFREG | 0o644, Excl: true})
	wantErrno(t, "bob (not in group 1000)", err, syscall.EACCES)
}

func TestStickyDirectory(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	// The root is 01777, owned by root.
	mk(t, v, alice, meta.RootIno, "a", syscall.S_IFREG|0o666)
	err := v.Unlink(ctx, bob, meta.RootIno, "a")
	wantErrno(t, "bob removing alice's file in a sticky directory", err, syscall.EPERM)
	err = v.Rename(ctx, bob, meta.RootIno, "a", meta.RootIno, "b", 0)
	wantErrno(t, "bob renaming alice's file in a sticky directory", err, syscall.EPERM)
	mk(t, v, bob, meta.RootIno, "bobs", syscall.S_IFREG|0o666)
	err = v.Rename(ctx, bob, meta.RootIno, "bobs", meta.RootIno, "a", 0)
	wantErrno(t, "bob renaming over alice's file in a sticky directory", err, syscall.EPERM)
	if err := v.Unlink(ctx, alice, meta.RootIno, "a"); err != nil {
		t.Fatalf("owner removing her file: %v", err)
	}
	if err := v.Unlink(ctx, Root, meta.RootIno, "bobs"); err != nil {
		t.Fatalf("root removing: %v", err)
	}
}

func TestChmodChownRules(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o6755)
	_, err := v.SetAttr(ctx, bob, f.Ino, SetAttr{Valid: meta.SetMode, Mode: 0o777})
	wantErrno(t, "chmod by a non-owner", err, syscall.EPERM)
	_, err = v.SetAttr(ctx, alice, f.Ino, SetAttr{Valid: meta.SetUid, Uid: bob.Uid})
	wantErrno(t, "chown to another uid by the owner", err, syscall.EPERM)
	_, err = v.SetAttr(ctx, alice, f.Ino, SetAttr{Valid: meta.SetGid, Gid: 4242})
	wantErrno(t, "chgrp to a group the owner is not in", err, syscall.EPERM)
	_, err = v.SetAttr(ctx, bob, f.Ino, SetAttr{Valid: meta.SetMtime, Mtime: 1})
	wantErrno(t, "explicit mtime by a non-owner", err, syscall.EPERM)
	// A chown (by root, too) clears the set-id bits of a non-directory.
	in, err := v.SetAttr(ctx, Root, f.Ino, SetAttr{Valid: meta.SetUid | meta.SetGid, Uid: carol.Uid, Gid: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if in.Mode&0o7777 != 0o755 {
		t.Fatalf("mode after chown %o, want 0755 (set-id bits cleared)", in.Mode&0o7777)
	}
	// A chmod to S_ISGID by an owner outside the file's group drops it.
	g := mk(t, v, alice, meta.RootIno, "g", syscall.S_IFREG|0o644)
	if _, err := v.SetAttr(ctx, Root, g.Ino, SetAttr{Valid: meta.SetGid, Gid: 77}); err != nil {
		t.Fatal(err)
	}
	in, err = v.SetAttr(ctx, alice, g.Ino, SetAttr{Valid: meta.SetMode, Mode: 0o2755})
	if err != nil {
		t.Fatal(err)
	}
	if in.Mode&0o7777 != 0o755 {
		t.Fatalf("mode after chmod 2755 by a non-member %o, want 0755", in.Mode&0o7777)
	}
	// Carol may chgrp her own file to a supplementary group.
	h := mk(t, v, carol, meta.RootIno, "h", syscall.S_IFREG|0o644)
	if in, err = v.SetAttr(ctx, carol, h.Ino, SetAttr{Valid: meta.SetGid, Gid: 50}); err != nil || in.Gid != 50 {
		t.Fatalf("chgrp to a supplementary group: gid %d, %v", in.Gid, err)
	}
}

func TestWriteClearsSetIDAndNeedsPermission(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o6777)
	_, err := v.WriteAt(ctx, bob, f.Ino, 0, []byte("x"), true)
	if err != nil {
		t.Fatalf("write to a 0777 file: %v", err)
	}
	in, err := v.GetAttr(ctx, f.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if in.Mode&0o7777 != 0o777 {
		t.Fatalf("mode after a write by a non-root caller %o, want 0777", in.Mode&0o7777)
	}
	ro := mk(t, v, alice, meta.RootIno, "ro", syscall.S_IFREG|0o644)
	_, err = v.WriteAt(ctx, bob, ro.Ino, 0, []byte("x"), true)
	wantErrno(t, "write to another's 0644 file", err, syscall.EACCES)
	_, err = v.SetAttr(ctx, bob, ro.Ino, SetAttr{Valid: meta.SetSize, Size: 0})
	wantErrno(t, "truncate of another's 0644 file", err, syscall.EACCES)
	secret := mk(t, v, alice, meta.RootIno, "secret", syscall.S_IFREG|0o600)
	_, _, err = v.ReadAt(ctx, bob, secret.Ino, 0, make([]byte, 8))
	wantErrno(t, "read of another's 0600 file", err, syscall.EACCES)
	// Root writes without clearing.
	s := mk(t, v, alice, meta.RootIno, "s", syscall.S_IFREG|0o4755)
	if _, err := v.WriteAt(ctx, Root, s.Ino, 0, []byte("y"), true); err != nil {
		t.Fatal(err)
	}
	if in, _ := v.GetAttr(ctx, s.Ino); in.Mode&0o7777 != 0o4755 {
		t.Fatalf("mode after root's write %o, want 04755", in.Mode&0o7777)
	}
}

func TestStatelessIOReadsBackAndReleasesWhenIdle(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o644)
	if _, err := v.WriteAt(ctx, alice, f.Ino, 3, []byte("hello"), false); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, eof, err := v.ReadAt(ctx, alice, f.Ino, 0, buf)
	if err != nil || n != 8 || !eof || string(buf[3:n]) != "hello" {
		t.Fatalf("read back n=%d eof=%v %q err=%v", n, eof, buf[:n], err)
	}
	if v.Open() != 1 {
		t.Fatalf("%d shared handles open, want 1", v.Open())
	}
	if err := v.Commit(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	in, err := v.api.GetAttr(ctx, f.Ino)
	if err != nil || in.Size != 8 {
		t.Fatalf("size at the meta service after commit %d, %v; want 8", in.Size, err)
	}
	_, _, err = v.ReadAt(ctx, alice, meta.RootIno, 0, buf)
	wantErrno(t, "read of a directory", err, syscall.EISDIR)
}

func TestNamesFromTheNetworkAreChecked(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	for _, name := range []string{"", ".", "..", "a/b", "a\x00b", string(make([]byte, 256))} {
		_, err := v.Create(ctx, alice, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0o644})
		if err == nil {
			t.Errorf("create %q: no error", name)
		}
	}
}

// TestFreshAttributesAnswerDirectoryChecks: a directory's attributes a
// caller fetched during its call (WithFresh) answer the permission
// checks of a lookup, a create and a remove in it, and of a SetAttr of
// it, without asking the meta service again; an inode the caller did not
// give is asked for.
func TestFreshAttributesAnswerDirectoryChecks(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o777)
	mk(t, v, alice, d.Ino, "f", syscall.S_IFREG|0o644)
	closed := d
	closed.Mode = syscall.S_IFDIR | 0o700 // as if alice had just closed it to others
	fctx := WithFresh(ctx, func(ino meta.Ino) (meta.Inode, bool) { return closed, ino == d.Ino })
	_, err := v.Lookup(fctx, bob, d.Ino, "f")
	wantErrno(t, "lookup by bob with the fresh 0700", err, syscall.EACCES)
	_, err = v.Create(fctx, bob, meta.CreateReq{Parent: d.Ino, Name: "g", Mode: syscall.S_IFREG | 0o644})
	wantErrno(t, "create by bob with the fresh 0700", err, syscall.EACCES)
	wantErrno(t, "unlink by bob with the fresh 0700", v.Unlink(fctx, bob, d.Ino, "f"), syscall.EACCES)
	bobs := closed
	bobs.Uid = bob.Uid // as if bob owned it
	bctx := WithFresh(ctx, func(ino meta.Ino) (meta.Inode, bool) { return bobs, ino == d.Ino })
	if _, err := v.SetAttr(bctx, bob, d.Ino, SetAttr{Valid: meta.SetMode, Mode: 0o755}); err != nil {
		t.Fatalf("chmod by bob, the owner in the fresh attributes: %v", err)
	}
	if _, err := v.Lookup(ctx, bob, d.Ino, "f"); err != nil {
		t.Fatalf("lookup by bob with the meta service's 0777: %v", err)
	}
	other := WithFresh(ctx, func(meta.Ino) (meta.Inode, bool) { return meta.Inode{}, false })
	if _, err := v.Lookup(other, bob, d.Ino, "f"); err != nil {
		t.Fatalf("lookup with nothing fresh for the directory: %v", err)
	}
}

// TestAccessOfAReadOnlyIdentity: access(2) for writing by a client whose
// identity may only read is EROFS (before the permission check, as Linux
// checks), for a regular file and a directory, not for a FIFO; reading
// is as the permissions say.
func TestAccessOfAReadOnlyIdentity(t *testing.T) {
	v, _ := newFSWith(t, Options{ReadOnly: true}, "")
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	f := mk(t, v, alice, d.Ino, "f", syscall.S_IFREG|0o600)
	p := mk(t, v, alice, d.Ino, "p", syscall.S_IFIFO|0o666)
	if !v.IdentityReadOnly() {
		t.Fatal("IdentityReadOnly is false for Options.ReadOnly")
	}
	_, err := v.Access(ctx, alice, f.Ino, MayWrite)
	wantErrno(t, "alice's access(W) of her file", err, syscall.EROFS)
	_, err = v.Access(ctx, bob, f.Ino, MayWrite)
	wantErrno(t, "bob's access(W) of alice's 0600 file", err, syscall.EROFS)
	_, err = v.Access(ctx, alice, d.Ino, MayWrite|MayExec)
	wantErrno(t, "alice's access(WX) of her directory", err, syscall.EROFS)
	if _, err := v.Access(ctx, alice, f.Ino, MayRead); err != nil {
		t.Errorf("alice's access(R) of her file: %v", err)
	}
	_, err = v.Access(ctx, bob, f.Ino, MayRead)
	wantErrno(t, "bob's access(R) of alice's 0600 file", err, syscall.EACCES)
	if _, err := v.Access(ctx, bob, p.Ino, MayWrite); err != nil {
		t.Errorf("bob's access(W) of a 0666 FIFO: %v", err)
	}
}
