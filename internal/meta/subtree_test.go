package meta

import (
	"context"
	"syscall"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

type subtreeFixture struct {
	t   *testing.T
	ctx context.Context
	s   *Service
}

func (f subtreeFixture) mk(parent Ino, name string, mode uint32) Ino {
	f.t.Helper()
	in, err := f.s.Create(f.ctx, CreateReq{Parent: parent, Name: name, Mode: mode, Excl: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return in.Ino
}

// want checks Within(ino, dir) for every dir given.
func (f subtreeFixture) want(what string, ino Ino, in bool, dirs ...Ino) {
	f.t.Helper()
	for _, d := range dirs {
		got, err := f.s.Within(f.ctx, ino, d)
		if err != nil {
			f.t.Fatalf("%s: Within(%d, %d): %v", what, ino, d, err)
		}
		if got != in {
			f.t.Fatalf("%s: Within(%d, %d) = %v, want %v", what, ino, d, got, in)
		}
	}
}

// TestWithinFollowsLinksAndRenames: the parent pointers of files, hard
// links and renamed entries never place an inode under a directory that
// holds no link to it.
func TestWithinFollowsLinksAndRenames(t *testing.T) {
	ctx := context.Background()
	s, err := New(memkv.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := subtreeFixture{t, ctx, s}
	a := f.mk(RootIno, "a", syscall.S_IFDIR|0755)
	a1 := f.mk(a, "a1", syscall.S_IFDIR|0755)
	b := f.mk(RootIno, "b", syscall.S_IFDIR|0755)
	file := f.mk(a1, "f", syscall.S_IFREG|0644)
	lnk, err := s.Create(ctx, CreateReq{Parent: a1, Name: "l", Mode: syscall.S_IFLNK, Target: "f"})
	if err != nil {
		t.Fatal(err)
	}
	f.want("a new file", file, true, a1, a, RootIno)
	f.want("a new file", file, false, b)
	f.want("a symlink", lnk.Ino, true, a1)
	f.want("a directory", a1, true, a, a1)
	f.want("a directory", a, false, a1, b)

	// A rename moves the pointer with the entry.
	if _, err := s.Rename(ctx, a1, "f", b, "f", 0); err != nil {
		t.Fatal(err)
	}
	f.want("a renamed file", file, true, b)
	f.want("a renamed file", file, false, a, a1)

	// A hard link: the pointer names one directory that holds it.
	if _, err := s.Link(ctx, file, a, "hard"); err != nil {
		t.Fatal(err)
	}
	f.want("a linked file", file, true, b)
	// Removing the link the pointer names leaves it unknown, not wrong.
	if _, err := s.Unlink(ctx, b, "f", 0); err != nil {
		t.Fatal(err)
	}
	f.want("a file whose pointed link went", file, false, a, b)
	f.want("a file whose pointed link went", file, true, RootIno)
	// A new link gives an unknown pointer its directory.
	if _, err := s.Link(ctx, file, a1, "again"); err != nil {
		t.Fatal(err)
	}
	f.want("a relinked file", file, true, a1, a)
	f.want("a relinked file", file, false, b)
	// A rename over a link the pointer names: the replaced inode
	// loses that link, and with it the pointer.
	other := f.mk(b, "o", syscall.S_IFREG|0644)
	if _, err := s.Rename(ctx, b, "o", a1, "again", 0); err != nil {
		t.Fatal(err)
	}
	f.want("a file replaced by a rename", file, false, a1, a)
	f.want("the file that replaced it", other, true, a1)
	// Exchange swaps the pointers.
	x := f.mk(b, "x", syscall.S_IFREG|0644)
	if _, err := s.Rename(ctx, a1, "again", b, "x", RenameExchange); err != nil {
		t.Fatal(err)
	}
	f.want("exchanged into b", other, true, b)
	f.want("exchanged into a1", x, true, a1)
	f.want("exchanged into a1", x, false, b)
	// A directory moved out takes its files with it.
	if _, err := s.Rename(ctx, a, "a1", b, "a1", 0); err != nil {
		t.Fatal(err)
	}
	f.want("a file in a moved directory", x, true, b, a1)
	f.want("a file in a moved directory", x, false, a)
	// An orphan keeps its last directory.
	in, err := s.Unlink(ctx, a1, "again", 0)
	if err != nil || in.Nlink != 0 {
		t.Fatalf("unlink: %v, nlink %d", err, in.Nlink)
	}
	f.want("an orphan", x, true, a1)
	// An O_TMPFILE inode lies in its directory.
	tmp, err := s.Create(ctx, CreateReq{Parent: a, Tmpfile: true, Mode: 0600})
	if err != nil {
		t.Fatal(err)
	}
	f.want("a tmpfile", tmp.Ino, true, a)
	f.want("a tmpfile", tmp.Ino, false, b)
	if _, err := s.Within(ctx, 1<<40, a); err == nil {
		t.Fatal("Within of an absent inode: no error")
	}
}

// TestUpgradeGivesFilesParents: a store of key-schema version 2 (files
// without parent pointers) gets them when New opens it.
func TestUpgradeGivesFilesParents(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	s, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := subtreeFixture{t, ctx, s}
	d := f.mk(RootIno, "d", syscall.S_IFDIR|0755)
	file := f.mk(d, "f", syscall.S_IFREG|0644)
	// Make it a version-2 store: no pointer on the file.
	err = store.Update(ctx, func(tx kv.Txn) error {
		t := txn{tx}
		rec, err := t.getInode(file)
		if err != nil {
			return err
		}
		rec.Parent = 0
		if err := t.putInode(rec); err != nil {
			return err
		}
		return tx.Put(keyFormat, encodeU64(2))
	})
	if err != nil {
		t.Fatal(err)
	}
	f.want("a version-2 file", file, false, d)
	if f.s, err = New(store, Options{}); err != nil {
		t.Fatal(err)
	}
	f.want("an upgraded file", file, true, d)
}
