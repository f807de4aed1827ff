package metatest

import (
	"strings"
	"syscall"
	"time"

	"tessera/internal/meta"
)

// tree builds, under the root: a/ (a/x file, a/sub/ (a/sub/deep/)), b/ (empty),
// c/ (c/y file), f, g, h (a hard link of f), and returns name -> inode.
func (h *harness) tree() map[string]meta.Inode {
	m := map[string]meta.Inode{}
	m["a"] = h.mkdir(meta.RootIno, "a")
	m["a/x"] = h.file(m["a"].Ino, "x")
	m["a/sub"] = h.mkdir(m["a"].Ino, "sub")
	m["a/sub/deep"] = h.mkdir(m["a/sub"].Ino, "deep")
	m["b"] = h.mkdir(meta.RootIno, "b")
	m["c"] = h.mkdir(meta.RootIno, "c")
	m["c/y"] = h.file(m["c"].Ino, "y")
	m["f"] = h.file(meta.RootIno, "f")
	m["g"] = h.file(meta.RootIno, "g")
	_, err := h.api.Link(h.ctx, m["f"].Ino, meta.RootIno, "h")
	h.wantErr("link h", err, nil)
	m["h"] = h.attr(m["f"].Ino)
	return m
}

func testRenameErrors(h *harness) {
	m := h.tree()
	R := meta.RootIno
	for _, c := range []struct {
		what  string
		op    meta.Ino
		on    string
		np    meta.Ino
		nn    string
		flags uint32
		want  error
	}{
		{"absent source", R, "nope", R, "z", 0, meta.ErrNotFound},
		{"absent old parent", 4242, "x", R, "z", 0, meta.ErrNotFound},
		{"old parent a file", m["f"].Ino, "x", R, "z", 0, meta.ErrNotDir},
		{"new parent a file", R, "g", m["f"].Ino, "z", 0, meta.ErrNotDir},
		{"no-replace onto file", R, "f", R, "g", meta.RenameNoReplace, meta.ErrExist},
		{"no-replace same name", R, "f", R, "f", meta.RenameNoReplace, meta.ErrExist},
		{"exchange with absent", R, "f", R, "z", meta.RenameExchange, meta.ErrNotFound},
		{"both flags", R, "f", R, "g", meta.RenameExchange | meta.RenameNoReplace, meta.ErrInvalid},
		{"unknown flag", R, "f", R, "g", 4, meta.ErrInvalid},
		{"dir into itself", R, "a", m["a"].Ino, "z", 0, meta.ErrInvalid},
		{"dir into its subtree", R, "a", m["a/sub/deep"].Ino, "z", 0, meta.ErrInvalid},
		{"exchange dir into its subtree", m["a/sub"].Ino, "deep", R, "a", meta.RenameExchange, meta.ErrInvalid},
		{"dir over file", R, "b", R, "f", 0, meta.ErrNotDir},
		{"file over dir", R, "f", R, "b", 0, meta.ErrIsDir},
		{"dir over non-empty dir", R, "b", R, "c", 0, meta.ErrNotEmpty},
		{"dir over non-empty dir across", m["a"].Ino, "sub", R, "c", 0, meta.ErrNotEmpty},
		{"bad new name", R, "f", R, "a/b", 0, meta.ErrInvalid},
	} {
		_, err := h.api.Rename(h.ctx, c.op, c.on, c.np, c.nn, c.flags)
		h.wantErr("rename "+c.what, err, c.want)
	}
	eq(h, "names unchanged", strings.Join(h.names(R), ","), "a,b,c,f,g,h")

	// Same inode (hard links) and same name: success, nothing changes.
	before := h.attr(m["f"].Ino)
	for _, nn := range []string{"h", "f"} {
		rep, err := h.api.Rename(h.ctx, R, "f", R, nn, 0)
		h.wantErr("rename onto a link of itself", err, nil)
		eq(h, "replaced nothing", rep.Ino, meta.Ino(0))
	}
	eq(h, "names after no-op", strings.Join(h.names(R), ","), "a,b,c,f,g,h")
	eq(h, "attr after no-op", h.attr(m["f"].Ino).Attr, before.Attr)
}

func testRenameMoves(h *harness) {
	m := h.tree()
	R := meta.RootIno

	// Within a directory, onto a new name.
	now := h.clock.Advance(time.Second)
	rep, err := h.api.Rename(h.ctx, R, "g", R, "g2", 0)
	h.wantErr("rename g g2", err, nil)
	eq(h, "replaced", rep.Ino, meta.Ino(0))
	g := h.lookup(R, "g2")
	eq(h, "moved ino", g.Ino, m["g"].Ino)
	eq(h, "moved ctime", g.Ctime, now)
	eq(h, "root mtime", h.attr(R).Mtime, now)
	_, err = h.api.Lookup(h.ctx, R, "g")
	h.wantErr("old name gone", err, meta.ErrNotFound)

	// File over file: the target loses a link and becomes an orphan.
	files := h.statfs().Files
	rep, err = h.api.Rename(h.ctx, m["c"].Ino, "y", R, "g2", 0)
	h.wantErr("rename c/y over g2", err, nil)
	eq(h, "replaced ino", rep.Ino, m["g"].Ino)
	eq(h, "replaced nlink", rep.Nlink, uint32(0))
	eq(h, "g2 is y", h.lookup(R, "g2").Ino, m["c/y"].Ino)
	eq(h, "c empty", len(h.names(m["c"].Ino)), 0)
	h.wantErr("reap replaced", h.api.Reap(h.ctx, rep.Ino), nil)
	eq(h, "files", h.statfs().Files, files-1)

	// Over one of several hard links: the target keeps a link.
	k := h.file(R, "k")
	rep, err = h.api.Rename(h.ctx, R, "k", R, "h", 0)
	h.wantErr("rename k over h", err, nil)
	eq(h, "replaced f", rep.Ino, m["f"].Ino)
	eq(h, "f nlink", h.attr(m["f"].Ino).Nlink, uint32(1))
	eq(h, "h is k", h.lookup(R, "h").Ino, k.Ino)

	// Directory across directories: parent link counts and pointer move.
	rootNlink := h.attr(R).Nlink
	now = h.clock.Advance(time.Second)
	_, err = h.api.Rename(h.ctx, m["a"].Ino, "sub", m["b"].Ino, "sub", 0)
	h.wantErr("rename a/sub b/sub", err, nil)
	eq(h, "a nlink", h.attr(m["a"].Ino).Nlink, uint32(2))
	eq(h, "b nlink", h.attr(m["b"].Ino).Nlink, uint32(3))
	eq(h, "a mtime", h.attr(m["a"].Ino).Mtime, now)
	eq(h, "b mtime", h.attr(m["b"].Ino).Mtime, now)
	// The parent pointer moved with it: b may not go under b/sub/deep, but
	// a, no longer its ancestor, may.
	_, err = h.api.Rename(h.ctx, R, "b", m["a/sub/deep"].Ino, "b", 0)
	h.wantErr("b under its own subtree", err, meta.ErrInvalid)
	_, err = h.api.Rename(h.ctx, R, "a", m["a/sub/deep"].Ino, "a", 0)
	h.wantErr("a under former child", err, nil)
	eq(h, "root nlink", h.attr(R).Nlink, rootNlink-1)

	// Directory over an empty directory.
	e := h.mkdir(R, "empty")
	rootNlink = h.attr(R).Nlink
	rep, err = h.api.Rename(h.ctx, R, "c", R, "empty", 0)
	h.wantErr("dir over empty dir", err, nil)
	eq(h, "replaced dir", rep.Ino, e.Ino)
	eq(h, "replaced dir nlink", rep.Nlink, uint32(0))
	_, err = h.api.GetAttr(h.ctx, e.Ino)
	h.wantErr("replaced dir gone", err, meta.ErrNotFound)
	eq(h, "root nlink after", h.attr(R).Nlink, rootNlink-1)
	eq(h, "names", strings.Join(h.names(R), ","), "b,empty,f,g2,h")

	// No-replace to a free name works.
	_, err = h.api.Rename(h.ctx, R, "f", m["b"].Ino, "f", meta.RenameNoReplace)
	h.wantErr("no-replace to free name", err, nil)
	eq(h, "moved f", h.lookup(m["b"].Ino, "f").Ino, m["f"].Ino)
}

func testRenameExchange(h *harness) {
	m := h.tree()
	R := meta.RootIno
	now := h.clock.Advance(time.Second)
	// File <-> directory across parents.
	rep, err := h.api.Rename(h.ctx, R, "g", m["a"].Ino, "sub", meta.RenameExchange)
	h.wantErr("exchange g a/sub", err, nil)
	eq(h, "replaced", rep.Ino, meta.Ino(0))
	eq(h, "a/sub is g", h.lookup(m["a"].Ino, "sub").Ino, m["g"].Ino)
	sub := h.lookup(R, "g")
	eq(h, "g is sub", sub.Ino, m["a/sub"].Ino)
	eq(h, "g type", sub.Mode&syscall.S_IFMT, uint32(syscall.S_IFDIR))
	eq(h, "a nlink", h.attr(m["a"].Ino).Nlink, uint32(2))
	eq(h, "root nlink", h.attr(R).Nlink, uint32(6))
	eq(h, "ctimes", [2]int64{sub.Ctime, h.attr(m["g"].Ino).Ctime}, [2]int64{now, now})
	ents, _, err := h.api.ReadDir(h.ctx, m["a"].Ino, "", 10, false)
	h.wantErr("readdir a", err, nil)
	for _, e := range ents {
		if e.Name == "sub" && e.Mode != syscall.S_IFREG {
			h.t.Fatalf("a/sub dentry type %o", e.Mode)
		}
	}
	// The moved directory's parent pointer follows: it may now hold a.
	_, err = h.api.Rename(h.ctx, R, "a", sub.Ino, "a", 0)
	h.wantErr("a under exchanged dir", err, nil)
	// Two files in one directory.
	_, err = h.api.Rename(h.ctx, R, "f", R, "g", meta.RenameExchange)
	h.wantErr("exchange f g(dir)", err, nil)
	eq(h, "f is dir", h.lookup(R, "f").Ino, sub.Ino)
	eq(h, "g is f", h.lookup(R, "g").Ino, m["f"].Ino)
}
