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

	// A hard link: the file is within every directory holding a link.
	if _, err := s.Link(ctx, file, a, "hard"); err != nil {
		t.Fatal(err)
	}
	f.want("a linked file", file, true, b, a)
	f.want("a linked file", file, false, a1)
	if _, err := s.Link(ctx, file, a1, "third"); err != nil {
		t.Fatal(err)
	}
	f.want("a file linked thrice", file, true, a, a1, b)
	// Removing the link the pointer names moves it to another.
	if _, err := s.Unlink(ctx, b, "f", 0); err != nil {
		t.Fatal(err)
	}
	f.want("a file whose pointed link went", file, true, a, a1, RootIno)
	f.want("a file whose pointed link went", file, false, b)
	if _, err := s.Unlink(ctx, a1, "third", 0); err != nil {
		t.Fatal(err)
	}
	f.want("a file back to one link", file, true, a)
	f.want("a file back to one link", file, false, a1, b)
	f.noLinkRecords(file)
	// Two links in one directory, one of them renamed away and back.
	if _, err := s.Link(ctx, file, a, "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename(ctx, a, "hard", b, "moved", 0); err != nil {
		t.Fatal(err)
	}
	f.want("links in a and b", file, true, a, b)
	if _, err := s.Unlink(ctx, b, "moved", 0); err != nil {
		t.Fatal(err)
	}
	f.want("its link in a", file, true, a)
	f.want("its link in a", file, false, b)
	f.noLinkRecords(file)
	if _, err := s.Rename(ctx, a, "again", a1, "again", 0); err != nil {
		t.Fatal(err)
	}
	// A rename over a file's only link: it becomes an orphan of that
	// directory; the file that replaced it lies there.
	other := f.mk(b, "o", syscall.S_IFREG|0644)
	if _, err := s.Rename(ctx, b, "o", a1, "again", 0); err != nil {
		t.Fatal(err)
	}
	f.want("a file replaced by a rename (an orphan)", file, true, a1)
	f.want("the file that replaced it", other, true, a1)
	f.want("the file that replaced it", other, false, b)
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

// noLinkRecords checks that ino, down to one link, kept no link records.
func (f subtreeFixture) noLinkRecords(ino Ino) {
	f.t.Helper()
	err := f.s.view(f.ctx, func(t txn) error {
		dirs, err := t.linkDirs(ino)
		if err == nil && len(dirs) != 0 {
			f.t.Errorf("inode %d with one link keeps link records %v", ino, dirs)
		}
		return err
	})
	if err != nil {
		f.t.Fatal(err)
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
	e := f.mk(RootIno, "e", syscall.S_IFDIR|0755)
	file := f.mk(d, "f", syscall.S_IFREG|0644)
	if _, err := s.Link(ctx, file, e, "g"); err != nil {
		t.Fatal(err)
	}
	// Make it a version-2 store: no pointer, no link records.
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
		if err := t.deletePrefix(linksPrefix(file)); err != nil {
			return err
		}
		return tx.Put(keyFormat, encodeU64(2))
	})
	if err != nil {
		t.Fatal(err)
	}
	f.want("a version-2 file", file, false, d, e)
	if f.s, err = New(store, Options{}); err != nil {
		t.Fatal(err)
	}
	f.want("an upgraded file", file, true, d, e)
	// Its link records work on: with one link gone, the other holds.
	if _, err := f.s.Unlink(ctx, d, "f", 0); err != nil {
		t.Fatal(err)
	}
	f.want("an upgraded file after an unlink", file, true, e)
	f.want("an upgraded file after an unlink", file, false, d)
	f.noLinkRecords(file)
}

// TestWithinOrphansOfRemovedDirectories: an orphan stays within the
// directories above its last one when that one is removed, and so does a
// removed directory kept open when its parent goes.
func TestWithinOrphansOfRemovedDirectories(t *testing.T) {
	ctx := context.Background()
	s, err := New(memkv.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := subtreeFixture{t, ctx, s}
	top := f.mk(RootIno, "top", syscall.S_IFDIR|0755)
	other := f.mk(RootIno, "other", syscall.S_IFDIR|0755)
	mid := f.mk(top, "mid", syscall.S_IFDIR|0755)
	low := f.mk(mid, "low", syscall.S_IFDIR|0755)
	file := f.mk(low, "f", syscall.S_IFREG|0644)
	keptDir := f.mk(mid, "kept", syscall.S_IFDIR|0755)
	sid := s.leases.open().ID
	bound := s.WithSession(sid)
	if _, err := bound.HoldOpen(ctx, keptDir); err != nil {
		t.Fatal(err)
	}
	// The file becomes an orphan (no reap: the caller holds it), then
	// its directory and the one above go.
	if in, err := s.Unlink(ctx, low, "f", 0); err != nil || in.Nlink != 0 {
		t.Fatalf("unlink: %v nlink %d", err, in.Nlink)
	}
	if err := s.Rmdir(ctx, mid, "low"); err != nil {
		t.Fatal(err)
	}
	f.want("an orphan whose directory went", file, true, mid, top)
	f.want("an orphan whose directory went", file, false, other)
	if err := s.Rmdir(ctx, mid, "kept"); err != nil {
		t.Fatal(err)
	}
	f.want("a removed directory held open", keptDir, true, mid, top)
	if err := s.Rmdir(ctx, top, "mid"); err != nil {
		t.Fatal(err)
	}
	f.want("an orphan two directories up", file, true, top)
	f.want("a removed directory held open, its parent gone", keptDir, true, top)
	f.want("a removed directory held open, its parent gone", keptDir, false, other)
	// Reaped, nothing is left filed under top.
	if err := s.Reap(ctx, file); err != nil {
		t.Fatal(err)
	}
	if err := bound.ReleaseOpen(ctx, keptDir); err != nil {
		t.Fatal(err)
	}
	err = s.view(ctx, func(t txn) error {
		p := []byte{pfxOrphanDir}
		return t.Scan(p, kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
			f.t.Errorf("orphan record %x left after every orphan went", k)
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
