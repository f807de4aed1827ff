package metatest

import (
	"syscall"
	"time"

	"tessera/internal/meta"
)

// openCases are the rules of open registrations (meta.API.HoldOpen): an
// orphan, or a removed directory, stays while a live session holds it
// open and goes with the last release or the holder's expiry. Run with the
// session cases.
var openCases = []struct {
	name string
	fn   func(h *harness)
}{
	{"OpenUnlinkHeld", testOpenUnlinkHeld},
	{"OpenCounted", testOpenCounted},
	{"OpenHolderExpires", testOpenHolderExpires},
	{"OpenHardLink", testOpenHardLink},
	{"OpenRenameOver", testOpenRenameOver},
	{"OpenCreate", testOpenCreate},
	{"OpenGone", testOpenGone},
	{"OpenDirRemoved", testOpenDirRemoved},
	{"OpenDirRenamedOver", testOpenDirRenamedOver},
}

func (s *sess) hold(ino meta.Ino) meta.Inode {
	s.h.t.Helper()
	in, err := s.api.HoldOpen(s.h.ctx, ino)
	s.h.wantErr("hold open", err, nil)
	return in
}

func (s *sess) release(ino meta.Ino) {
	s.h.t.Helper()
	s.h.wantErr("release open", s.api.ReleaseOpen(s.h.ctx, ino), nil)
}

// gone fails unless ino is deleted.
func (h *harness) gone(what string, ino meta.Ino) {
	h.t.Helper()
	_, err := h.api.GetAttr(h.ctx, ino)
	h.wantErr(what, err, meta.ErrNotFound)
}

// unlinkReap unlinks root/name as a client with no handle open on it.
func (h *harness) unlinkReap(name string, ino meta.Ino) meta.Inode {
	h.t.Helper()
	in, err := h.api.Unlink(h.ctx, meta.RootIno, name, ino)
	h.wantErr("unlink "+name, err, nil)
	return in
}

// testOpenUnlinkHeld: a file one session holds open and another client
// unlinks (saying it has no handle open) stays, readable and writable,
// with its blocks, until the holder releases it.
func testOpenUnlinkHeld(h *harness) {
	a := h.session()
	base := h.statfs()
	f := h.file(meta.RootIno, "f")
	a.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "x")}, Size: 10})
	eq(h, "hold returns the inode", a.hold(f.Ino).Size, uint64(10))
	out := h.unlinkReap("f", f.Ino)
	eq(h, "nlink after unlink", out.Nlink, uint32(0))
	eq(h, "held orphan readable", a.attr(f.Ino).Nlink, uint32(0))
	r, err := a.api.GetRecipe(h.ctx, f.Ino, 0, 1)
	h.wantErr("recipe of the held orphan", err, nil)
	eq(h, "held orphan's block", r.Blocks[0], hashOf("x"))
	a.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, Old: hashOf("x"), New: hashOf("y")}}, Size: 10})
	if w := h.walk(); len(w) != 1 || w[0].Hash != hashOf("y") {
		h.t.Fatalf("blocks of the held orphan walked: %v", w)
	}
	h.wantErr("reap while held", h.api.Reap(h.ctx, f.Ino), nil)
	eq(h, "reap leaves the held orphan", h.attr(f.Ino).Size, uint64(10))
	eq(h, "files while held", h.statfs().Files, base.Files+1)

	a.release(f.Ino)
	h.gone("after the last release", f.Ino)
	eq(h, "files after the last release", h.statfs().Files, base.Files)
	if w := h.walk(); len(w) != 0 {
		h.t.Fatalf("blocks of the released orphan still walked: %v", w)
	}
}

// testOpenCounted: opens count per session and across sessions; the inode
// goes with the last release of the last holder.
func testOpenCounted(h *harness) {
	a, b := h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	a.hold(f.Ino)
	a.hold(f.Ino)
	b.hold(f.Ino)
	h.unlinkReap("f", f.Ino)
	a.release(f.Ino)
	eq(h, "held twice by a, released once", h.attr(f.Ino).Nlink, uint32(0))
	a.release(f.Ino)
	a.release(f.Ino) // one too many: changes nothing
	eq(h, "still held by b", h.attr(f.Ino).Nlink, uint32(0))
	b.release(f.Ino)
	h.gone("after every holder released", f.Ino)
}

// testOpenHolderExpires: a holder whose session expired holds nothing: its
// orphan is reaped, and a hold made on an expired session holds nothing
// either (the client re-announces with its next session).
func testOpenHolderExpires(h *harness) {
	a, b := h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	a.hold(f.Ino)
	h.unlinkReap("f", f.Ino)
	h.wantErr("reap while held", h.api.Reap(h.ctx, f.Ino), nil)
	eq(h, "held", h.attr(f.Ino).Nlink, uint32(0))
	h.clock.Advance(ttl + time.Millisecond) // a never polled
	h.wantErr("reap after the holder expired", h.api.Reap(h.ctx, f.Ino), nil)
	h.gone("after the holder expired", f.Ino)

	g := h.file(meta.RootIno, "g")
	b.hold(g.Ino) // b expired too: holds nothing
	h.unlinkReap("g", g.Ino)
	h.gone("unlinked while held by an expired session", g.Ino)

	c := h.session()
	k := h.file(meta.RootIno, "k")
	c.hold(k.Ino)
	h.clock.Advance(ttl - time.Millisecond)
	c.poll() // renews
	h.clock.Advance(2 * time.Millisecond)
	h.unlinkReap("k", k.Ino)
	eq(h, "held by a renewed session", h.attr(k.Ino).Nlink, uint32(0))
	h.wantErr("close session", h.api.CloseSession(h.ctx, c.id), nil)
	h.wantErr("reap after close", h.api.Reap(h.ctx, k.Ino), nil)
	h.gone("after the holder closed its session", k.Ino)
}

// testOpenHardLink: removing one of two names of a held file leaves a
// linked file, not an orphan; the release keeps it.
func testOpenHardLink(h *harness) {
	a := h.session()
	f := h.file(meta.RootIno, "f")
	_, err := h.api.Link(h.ctx, f.Ino, meta.RootIno, "f2")
	h.wantErr("link", err, nil)
	a.hold(f.Ino)
	eq(h, "nlink after removing one name", h.unlinkReap("f", f.Ino).Nlink, uint32(1))
	a.release(f.Ino)
	eq(h, "linked file after the release", h.attr(f.Ino).Nlink, uint32(1))
	h.unlinkReap("f2", f.Ino)
	h.gone("last name removed, nothing held", f.Ino)
}

// testOpenRenameOver: the file a rename replaces becomes an orphan held
// open by its holder.
func testOpenRenameOver(h *harness) {
	a := h.session()
	f := h.file(meta.RootIno, "f")
	g := h.file(meta.RootIno, "g")
	a.hold(f.Ino)
	replaced, err := h.api.Rename(h.ctx, meta.RootIno, "g", meta.RootIno, "f", 0)
	h.wantErr("rename over", err, nil)
	eq(h, "replaced", replaced.Ino, f.Ino)
	eq(h, "replaced nlink", replaced.Nlink, uint32(0))
	h.wantErr("reap while held", h.api.Reap(h.ctx, f.Ino), nil)
	eq(h, "replaced, held", h.attr(f.Ino).Nlink, uint32(0))
	a.release(f.Ino)
	h.gone("replaced, released", f.Ino)
	eq(h, "the new f", h.attr(g.Ino).Nlink, uint32(1))
}

// testOpenCreate: a create with Open holds what it returns, new or found.
func testOpenCreate(h *harness) {
	a := h.session()
	in, err := a.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Open: true})
	h.wantErr("create with open", err, nil)
	found, err := a.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Open: true})
	h.wantErr("create with open of an existing file", err, nil)
	eq(h, "found", found.Ino, in.Ino)
	h.unlinkReap("f", in.Ino)
	a.release(in.Ino)
	eq(h, "held by the second create", h.attr(in.Ino).Nlink, uint32(0))
	a.release(in.Ino)
	h.gone("both creates released", in.Ino)
}

// testOpenGone: holding an inode that does not exist fails and holds
// nothing.
func testOpenGone(h *harness) {
	a := h.session()
	_, err := a.api.HoldOpen(h.ctx, 1<<40)
	h.wantErr("hold of no inode", err, meta.ErrNotFound)
	f := h.file(meta.RootIno, "f")
	h.unlinkReap("f", f.Ino)
	_, err = a.api.HoldOpen(h.ctx, f.Ino)
	h.wantErr("hold of a deleted inode", err, meta.ErrNotFound)
}

// testOpenDirRemoved: a directory held open and removed stays as an
// orphan (nlink 0, stat answers, lists empty, takes no entries) until the
// release.
func testOpenDirRemoved(h *harness) {
	a := h.session()
	base := h.statfs()
	d := h.mkdir(meta.RootIno, "d")
	a.hold(d.Ino)
	h.wantErr("rmdir", h.api.Rmdir(h.ctx, meta.RootIno, "d"), nil)
	_, err := h.api.Lookup(h.ctx, meta.RootIno, "d")
	h.wantErr("lookup of the removed name", err, meta.ErrNotFound)
	in := a.attr(d.Ino)
	eq(h, "removed dir nlink", in.Nlink, uint32(0))
	eq(h, "removed dir is a dir", in.IsDir(), true)
	eq(h, "root nlink", h.attr(meta.RootIno).Nlink, uint32(2))
	ents, more, err := h.api.ReadDir(h.ctx, d.Ino, "", 0, false)
	h.wantErr("readdir of the removed dir", err, nil)
	eq(h, "entries of the removed dir", len(ents), 0)
	eq(h, "more", more, false)
	_, err = h.api.Create(h.ctx, meta.CreateReq{Parent: d.Ino, Name: "x", Mode: syscall.S_IFREG | 0o644})
	h.wantErr("create in the removed dir", err, meta.ErrNotFound)
	a.release(d.Ino)
	h.gone("removed dir after the release", d.Ino)
	eq(h, "files after", h.statfs().Files, base.Files)

	e := h.mkdir(meta.RootIno, "e")
	h.wantErr("rmdir of a dir nobody holds", h.api.Rmdir(h.ctx, meta.RootIno, "e"), nil)
	h.gone("removed dir nobody held", e.Ino)
}

// testOpenDirRenamedOver: the directory a rename replaces stays while
// held (ext4 answers fstat on it with nlink 0).
func testOpenDirRenamedOver(h *harness) {
	a := h.session()
	d1 := h.mkdir(meta.RootIno, "d1")
	d2 := h.mkdir(meta.RootIno, "d2")
	h.file(d1.Ino, "x")
	a.hold(d2.Ino)
	replaced, err := h.api.Rename(h.ctx, meta.RootIno, "d1", meta.RootIno, "d2", 0)
	h.wantErr("rename over a dir", err, nil)
	eq(h, "replaced", replaced.Ino, d2.Ino)
	eq(h, "replaced nlink", replaced.Nlink, uint32(0))
	eq(h, "held replaced dir", a.attr(d2.Ino).Nlink, uint32(0))
	eq(h, "root nlink", h.attr(meta.RootIno).Nlink, uint32(3))
	a.release(d2.Ino)
	h.gone("replaced dir after the release", d2.Ino)
	in, err := h.api.Lookup(h.ctx, meta.RootIno, "d2")
	h.wantErr("lookup d2", err, nil)
	eq(h, "d2 is the old d1", in.Ino, d1.Ino)
}
