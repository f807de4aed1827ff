package vfs_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// TestAccessInAReadOnlyFileset: access(2) for writing a file or the
// directory of a read-only fileset is EROFS whoever asks (ReadOnlyAt says
// so, for the NFS server's ACCESS); reading is allowed; in a local-update
// fileset writing is as the permissions say.
func TestAccessInAReadOnlyFileset(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		mode meta.FilesetMode
		want error
	}{{meta.ModeRO, syscall.EROFS}, {meta.ModeLU, nil}} {
		v, _, _, _ := filesetFS(t, c.mode)
		f := lookupF(t, v)
		d, err := v.Lookup(ctx, vfs.Root, meta.RootIno, "cache")
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []meta.Inode{f, d} {
			if _, err := v.Access(ctx, vfs.Root, in.Ino, vfs.MayWrite); !errors.Is(err, c.want) && (err != nil || c.want != nil) {
				t.Errorf("fileset mode %v, inode %d: access(W) got %v, want %v", c.mode, in.Ino, err, c.want)
			}
			if got := v.ReadOnlyAt(ctx, &in); got != (c.want != nil) {
				t.Errorf("fileset mode %v, inode %d: ReadOnlyAt %v", c.mode, in.Ino, got)
			}
			if _, err := v.Access(ctx, vfs.Root, in.Ino, vfs.MayRead); err != nil {
				t.Errorf("fileset mode %v, inode %d: access(R): %v", c.mode, in.Ino, err)
			}
		}
	}
}
