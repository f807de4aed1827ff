package vfs

import (
	"context"
	"slices"
	"syscall"
	"testing"

	"tessera/internal/meta"
)

// TestXattrPermissions: user.* values need read permission to read and
// write permission to change; trusted.* is root's (hidden from others);
// security.* is changed by root only; special files hold no user.*
// attributes; POSIX ACL names are ENODATA to read and EOPNOTSUPP to set,
// also for a Checked caller.
func TestXattrPermissions(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o640)
	if err := v.SetXattr(ctx, alice, f.Ino, "user.k", []byte("v"), 0); err != nil {
		t.Fatalf("owner sets user.k: %v", err)
	}
	if got, err := v.GetXattr(ctx, carol, f.Ino, "user.k"); err != nil || string(got) != "v" {
		t.Fatalf("group member (supplementary) reads user.k: %q, %v", got, err)
	}
	_, err := v.GetXattr(ctx, bob, f.Ino, "user.k")
	wantErrno(t, "other reads user.k of a 0640 file", err, syscall.EACCES)
	wantErrno(t, "group member sets user.k of a 0640 file", v.SetXattr(ctx, carol, f.Ino, "user.k", []byte("w"), 0), syscall.EACCES)
	wantErrno(t, "group member removes user.k of a 0640 file", v.RemoveXattr(ctx, carol, f.Ino, "user.k"), syscall.EACCES)

	wantErrno(t, "owner sets trusted.t", v.SetXattr(ctx, alice, f.Ino, "trusted.t", []byte("x"), 0), syscall.EPERM)
	if err := v.SetXattr(ctx, Root, f.Ino, "trusted.t", []byte("x"), 0); err != nil {
		t.Fatalf("root sets trusted.t: %v", err)
	}
	_, err = v.GetXattr(ctx, alice, f.Ino, "trusted.t")
	wantErrno(t, "owner reads trusted.t", err, syscall.ENODATA)
	names, err := v.ListXattr(ctx, alice, f.Ino)
	if err != nil || !slices.Contains(names, "user.k") || slices.Contains(names, "trusted.t") {
		t.Fatalf("owner lists %v (%v); want user.k and not trusted.t", names, err)
	}
	if names, _ := v.ListXattr(ctx, Root, f.Ino); !slices.Contains(names, "trusted.t") {
		t.Fatalf("root lists %v; want trusted.t among them", names)
	}
	wantErrno(t, "owner sets security.s", v.SetXattr(ctx, alice, f.Ino, "security.s", []byte("x"), 0), syscall.EPERM)
	wantErrno(t, "a name in no namespace", v.SetXattr(ctx, alice, f.Ino, "bogus.n", []byte("x"), 0), syscall.EOPNOTSUPP)

	fifo := mk(t, v, alice, meta.RootIno, "fifo", syscall.S_IFIFO|0o666)
	wantErrno(t, "user.k on a fifo", v.SetXattr(ctx, alice, fifo.Ino, "user.k", []byte("x"), 0), syscall.EPERM)

	checked := Cred{Uid: 1001, Checked: true}
	_, err = v.GetXattr(ctx, checked, f.Ino, "system.posix_acl_access")
	wantErrno(t, "read of an ACL", err, syscall.ENODATA)
	wantErrno(t, "set of an ACL", v.SetXattr(ctx, checked, f.Ino, "system.posix_acl_access", []byte{2}, 0), syscall.EOPNOTSUPP)
	if _, err := v.GetXattr(ctx, checked, f.Ino, "user.k"); err != nil {
		t.Fatalf("a checked caller is not checked again: %v", err)
	}
}
