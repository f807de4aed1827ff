package metatest

import (
	"slices"
	"strings"
	"syscall"
	"time"

	"tessera/internal/meta"
)

func testRoot(h *harness) {
	r := h.attr(meta.RootIno)
	eq(h, "root mode", r.Mode, uint32(syscall.S_IFDIR|0775))
	eq(h, "root nlink", r.Nlink, uint32(2))
	eq(h, "root uid", r.Uid, uint32(rootUid))
	eq(h, "root gid", r.Gid, uint32(rootGid))
	eq(h, "root policy", r.Policy, rootPolicy)
	eq(h, "root block size", r.BlockSize, uint32(blockSize))
	eq(h, "root mtime", r.Mtime, h.clock.Now().UnixNano())
	_, err := h.api.GetAttr(h.ctx, 999)
	h.wantErr("getattr 999", err, meta.ErrNotFound)
}

func testNames(h *harness) {
	h.file(meta.RootIno, strings.Repeat("n", meta.MaxNameLen))
	for _, c := range []struct {
		name string
		want error
	}{
		{"", meta.ErrInvalid},
		{".", meta.ErrInvalid},
		{"..", meta.ErrInvalid},
		{"a/b", meta.ErrInvalid},
		{"a\x00b", meta.ErrInvalid},
		{strings.Repeat("n", meta.MaxNameLen+1), meta.ErrNameTooLong},
	} {
		_, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: c.name, Mode: syscall.S_IFREG | 0644})
		h.wantErr("create "+c.name, err, c.want)
		_, err = h.api.Lookup(h.ctx, meta.RootIno, c.name)
		h.wantErr("lookup "+c.name, err, c.want)
		_, err = h.api.Unlink(h.ctx, meta.RootIno, c.name, 0)
		h.wantErr("unlink "+c.name, err, c.want)
		h.wantErr("rmdir "+c.name, h.api.Rmdir(h.ctx, meta.RootIno, c.name), c.want)
		_, err = h.api.Rename(h.ctx, meta.RootIno, strings.Repeat("n", meta.MaxNameLen), meta.RootIno, c.name, 0)
		h.wantErr("rename to "+c.name, err, c.want)
		_, err = h.api.Link(h.ctx, meta.RootIno, meta.RootIno, c.name)
		h.wantErr("link "+c.name, err, c.want)
	}
}

func testCreate(h *harness) {
	root := h.attr(meta.RootIno)
	now := h.clock.Advance(time.Second)
	f := h.file(meta.RootIno, "f")
	eq(h, "mode", f.Mode, uint32(syscall.S_IFREG|0644))
	eq(h, "nlink", f.Nlink, uint32(1))
	eq(h, "uid", f.Uid, uint32(7))
	eq(h, "gid", f.Gid, uint32(8))
	eq(h, "times", [3]int64{f.Atime, f.Mtime, f.Ctime}, [3]int64{now, now, now})
	eq(h, "block size", f.BlockSize, uint32(blockSize))
	eq(h, "policy", f.Policy, rootPolicy)
	eq(h, "size", f.Size, uint64(0))
	eq(h, "has inline", f.HasInline, false)
	if f.Ino <= meta.RootIno || f.Gen == 0 {
		h.t.Fatalf("ino %d gen %d", f.Ino, f.Gen)
	}
	r := h.attr(meta.RootIno)
	eq(h, "parent mtime", r.Mtime, now)
	eq(h, "parent ctime", r.Ctime, now)
	eq(h, "parent nlink", r.Nlink, uint32(2))
	if r.Change <= root.Change {
		h.t.Fatalf("parent change %d not bumped from %d", r.Change, root.Change)
	}

	_, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0600, Excl: true})
	h.wantErr("create excl existing", err, meta.ErrExist)
	again, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0600})
	h.wantErr("create existing", err, nil)
	eq(h, "existing ino", again.Ino, f.Ino)
	eq(h, "existing mode", again.Mode, f.Mode)

	d := h.mkdir(meta.RootIno, "d")
	eq(h, "dir nlink", d.Nlink, uint32(2))
	eq(h, "dir mode", d.Mode, uint32(syscall.S_IFDIR|0755))
	eq(h, "root nlink after mkdir", h.attr(meta.RootIno).Nlink, uint32(3))
	eq(h, "dir policy", d.Policy, rootPolicy)
	sub := h.file(d.Ino, "g")
	eq(h, "nested policy", sub.Policy, rootPolicy)

	for _, c := range []struct {
		what string
		req  meta.CreateReq
		want error
	}{
		{"mkdir existing", meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0755}, meta.ErrExist},
		{"mkdir over file", meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFDIR | 0755}, meta.ErrExist},
		{"symlink existing", meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFLNK, Target: "x"}, meta.ErrExist},
		{"mknod existing", meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFIFO | 0644}, meta.ErrExist},
		{"open-create a dir", meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFREG | 0644}, meta.ErrIsDir},
		{"parent is a file", meta.CreateReq{Parent: f.Ino, Name: "x", Mode: syscall.S_IFREG | 0644}, meta.ErrNotDir},
		{"parent absent", meta.CreateReq{Parent: 4242, Name: "x", Mode: syscall.S_IFREG | 0644}, meta.ErrNotFound},
		{"bad type", meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: 0o030000 | 0644}, meta.ErrInvalid},
		{"empty symlink", meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: syscall.S_IFLNK}, meta.ErrNotFound},
		{"long symlink", meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: syscall.S_IFLNK, Target: strings.Repeat("t", meta.MaxTargetLen+1)}, meta.ErrNameTooLong},
	} {
		_, err := h.api.Create(h.ctx, c.req)
		h.wantErr(c.what, err, c.want)
	}
	eq(h, "names", strings.Join(h.names(meta.RootIno), ","), "d,f")
}

func testCreateSpecial(h *harness) {
	l, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "l", Mode: syscall.S_IFLNK | 0600, Target: "a/b/c"})
	h.wantErr("symlink", err, nil)
	eq(h, "symlink mode", l.Mode, uint32(syscall.S_IFLNK|0777))
	eq(h, "symlink size", l.Size, uint64(5))
	eq(h, "symlink target", h.lookup(meta.RootIno, "l").Target, "a/b/c")
	c, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "c", Mode: syscall.S_IFCHR | 0600, Rdev: 0x0103})
	h.wantErr("mknod chr", err, nil)
	eq(h, "rdev", h.attr(c.Ino).Rdev, uint32(0x0103))
	p, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "p", Mode: syscall.S_IFIFO | 0600})
	h.wantErr("mkfifo", err, nil)
	eq(h, "fifo mode", p.Mode, uint32(syscall.S_IFIFO|0600))
	r, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "r", Mode: 0644})
	h.wantErr("mknod with no type", err, nil)
	eq(h, "no type is regular", r.Mode, uint32(syscall.S_IFREG|0644))
	ents, _, err := h.api.ReadDir(h.ctx, meta.RootIno, "", 10, false)
	h.wantErr("readdir", err, nil)
	types := map[string]uint32{}
	for _, e := range ents {
		types[e.Name] = e.Mode
	}
	eq(h, "dentry types", [4]uint32{types["c"], types["l"], types["p"], types["r"]},
		[4]uint32{syscall.S_IFCHR, syscall.S_IFLNK, syscall.S_IFIFO, syscall.S_IFREG})
}

func testSetgid(h *harness) {
	d := h.mkdir(meta.RootIno, "sg")
	_, err := h.api.SetAttr(h.ctx, d.Ino, meta.SetAttrReq{Valid: meta.SetMode | meta.SetGid, Mode: 02775, Gid: 55})
	h.wantErr("chmod g+s", err, nil)
	f := h.file(d.Ino, "f")
	eq(h, "file gid", f.Gid, uint32(55))
	eq(h, "file mode", f.Mode, uint32(syscall.S_IFREG|0644))
	sub := h.mkdir(d.Ino, "sub")
	eq(h, "dir gid", sub.Gid, uint32(55))
	eq(h, "dir mode", sub.Mode, uint32(syscall.S_IFDIR|02755))
	plain := h.file(meta.RootIno, "plain")
	eq(h, "plain gid", plain.Gid, uint32(8))
}

func testLookup(h *harness) {
	f := h.file(meta.RootIno, "f")
	got := h.lookup(meta.RootIno, "f")
	eq(h, "ino", got.Ino, f.Ino)
	eq(h, "attr", got.Attr, f.Attr)
	_, err := h.api.Lookup(h.ctx, meta.RootIno, "nope")
	h.wantErr("lookup absent", err, meta.ErrNotFound)
	_, err = h.api.Lookup(h.ctx, f.Ino, "x")
	h.wantErr("lookup in a file", err, meta.ErrNotDir)
	_, err = h.api.Lookup(h.ctx, 4242, "x")
	h.wantErr("lookup in absent dir", err, meta.ErrNotFound)
}

func testLink(h *harness) {
	f := h.file(meta.RootIno, "f")
	d := h.mkdir(meta.RootIno, "d")
	now := h.clock.Advance(time.Second)
	l, err := h.api.Link(h.ctx, f.Ino, d.Ino, "hard")
	h.wantErr("link", err, nil)
	eq(h, "nlink", l.Nlink, uint32(2))
	eq(h, "ctime", l.Ctime, now)
	eq(h, "dir mtime", h.attr(d.Ino).Mtime, now)
	eq(h, "same ino", h.lookup(d.Ino, "hard").Ino, f.Ino)
	if l.Change <= f.Change {
		h.t.Fatal("link did not bump change")
	}
	for _, c := range []struct {
		what     string
		ino, dir meta.Ino
		name     string
		want     error
	}{
		{"existing name", f.Ino, meta.RootIno, "d", meta.ErrExist},
		{"a directory", d.Ino, meta.RootIno, "d2", meta.ErrPerm},
		{"into a file", f.Ino, f.Ino, "x", meta.ErrNotDir},
		{"absent inode", 4242, meta.RootIno, "x", meta.ErrNotFound},
		{"absent dir", f.Ino, 4242, "x", meta.ErrNotFound},
	} {
		_, err := h.api.Link(h.ctx, c.ino, c.dir, c.name)
		h.wantErr("link "+c.what, err, c.want)
	}
	g := h.file(meta.RootIno, "g")
	_, err = h.api.Unlink(h.ctx, meta.RootIno, "g", 0)
	h.wantErr("unlink g", err, nil)
	_, err = h.api.Link(h.ctx, g.Ino, meta.RootIno, "g2")
	h.wantErr("link an orphan", err, meta.ErrNotFound)
}

// testTmpfile: an O_TMPFILE inode has no name and Nlink 0, leaves its
// directory unchanged, may be linked (unlike an unlinked file) and is gone
// once reaped unlinked.
func testTmpfile(h *harness) {
	root := h.attr(meta.RootIno)
	h.clock.Advance(time.Second)
	tmp := func() meta.Inode {
		in, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Mode: syscall.S_IFREG | 0o600, Uid: 7, Gid: 8, Tmpfile: true})
		h.wantErr("create a tmpfile", err, nil)
		return in
	}
	f := tmp()
	eq(h, "nlink", f.Nlink, uint32(0))
	eq(h, "mode", f.Mode, uint32(syscall.S_IFREG|0o600))
	eq(h, "names", len(h.names(meta.RootIno)), 0)
	eq(h, "parent mtime", h.attr(meta.RootIno).Mtime, root.Mtime)
	l, err := h.api.Link(h.ctx, f.Ino, meta.RootIno, "named")
	h.wantErr("link a tmpfile", err, nil)
	eq(h, "nlink after link", l.Nlink, uint32(1))
	h.wantErr("reap a linked tmpfile", h.api.Reap(h.ctx, f.Ino), nil)
	eq(h, "named", h.lookup(meta.RootIno, "named").Ino, f.Ino)

	g := tmp()
	h.wantErr("reap a tmpfile", h.api.Reap(h.ctx, g.Ino), nil)
	_, err = h.api.GetAttr(h.ctx, g.Ino)
	h.wantErr("getattr of a reaped tmpfile", err, meta.ErrNotFound)
	_, err = h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Mode: syscall.S_IFDIR | 0o700, Tmpfile: true})
	h.wantErr("a tmpfile directory", err, meta.ErrInvalid)
}

func testUnlinkReap(h *harness) {
	f := h.file(meta.RootIno, "f")
	_, err := h.api.Link(h.ctx, f.Ino, meta.RootIno, "f2")
	h.wantErr("link", err, nil)
	d := h.mkdir(meta.RootIno, "d")
	base := h.statfs()
	now := h.clock.Advance(time.Second)
	in, err := h.api.Unlink(h.ctx, meta.RootIno, "f", 0)
	h.wantErr("unlink f", err, nil)
	eq(h, "nlink", in.Nlink, uint32(1))
	eq(h, "ctime", in.Ctime, now)
	eq(h, "root mtime", h.attr(meta.RootIno).Mtime, now)
	h.wantErr("reap linked", h.api.Reap(h.ctx, f.Ino), nil)
	eq(h, "still there", h.attr(f.Ino).Nlink, uint32(1))

	_, err = h.api.Commit(h.ctx, meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, New: hashOf("x")}}, Size: 10})
	h.wantErr("commit", err, nil)
	h.wantErr("setxattr", h.api.SetXattr(h.ctx, f.Ino, "user.a", []byte("v"), 0), nil)
	in, err = h.api.Unlink(h.ctx, meta.RootIno, "f2", 0)
	h.wantErr("unlink f2", err, nil)
	eq(h, "orphan nlink", in.Nlink, uint32(0))
	eq(h, "orphan readable", h.attr(f.Ino).Size, uint64(10))
	eq(h, "files while orphan", h.statfs().Files, base.Files)
	if blocks := h.walk(); len(blocks) != 1 {
		h.t.Fatalf("orphan's blocks walked: %v", blocks)
	}
	h.wantErr("reap", h.api.Reap(h.ctx, f.Ino), nil)
	_, err = h.api.GetAttr(h.ctx, f.Ino)
	h.wantErr("getattr reaped", err, meta.ErrNotFound)
	st := h.statfs()
	eq(h, "files after reap", st.Files, base.Files-1)
	eq(h, "bytes after reap", st.LogicalBytes, base.LogicalBytes)
	if blocks := h.walk(); len(blocks) != 0 {
		h.t.Fatalf("reaped blocks still walked: %v", blocks)
	}
	h.wantErr("reap again", h.api.Reap(h.ctx, f.Ino), nil)

	_, err = h.api.Unlink(h.ctx, meta.RootIno, "f", 0)
	h.wantErr("unlink absent", err, meta.ErrNotFound)
	_, err = h.api.Unlink(h.ctx, meta.RootIno, "d", 0)
	h.wantErr("unlink dir", err, meta.ErrIsDir)
	_, err = h.api.Unlink(h.ctx, d.Ino+1000, "x", 0)
	h.wantErr("unlink in absent dir", err, meta.ErrNotFound)
}

func testRmdir(h *harness) {
	d := h.mkdir(meta.RootIno, "d")
	h.mkdir(d.Ino, "sub")
	f := h.file(meta.RootIno, "f")
	h.wantErr("xattr", h.api.SetXattr(h.ctx, d.Ino, "user.x", nil, 0), nil)
	eq(h, "d nlink", h.attr(d.Ino).Nlink, uint32(3))
	h.wantErr("rmdir non-empty", h.api.Rmdir(h.ctx, meta.RootIno, "d"), meta.ErrNotEmpty)
	h.wantErr("rmdir file", h.api.Rmdir(h.ctx, meta.RootIno, "f"), meta.ErrNotDir)
	h.wantErr("rmdir absent", h.api.Rmdir(h.ctx, meta.RootIno, "nope"), meta.ErrNotFound)
	h.wantErr("rmdir in a file", h.api.Rmdir(h.ctx, f.Ino, "x"), meta.ErrNotDir)
	files := h.statfs().Files
	now := h.clock.Advance(time.Second)
	h.wantErr("rmdir sub", h.api.Rmdir(h.ctx, d.Ino, "sub"), nil)
	dd := h.attr(d.Ino)
	eq(h, "d nlink after", dd.Nlink, uint32(2))
	eq(h, "d mtime", dd.Mtime, now)
	h.wantErr("rmdir d", h.api.Rmdir(h.ctx, meta.RootIno, "d"), nil)
	eq(h, "root nlink", h.attr(meta.RootIno).Nlink, uint32(2))
	eq(h, "files", h.statfs().Files, files-2)
	_, err := h.api.GetAttr(h.ctx, d.Ino)
	h.wantErr("getattr removed dir", err, meta.ErrNotFound)
	eq(h, "names", strings.Join(h.names(meta.RootIno), ","), "f")
}

func testReadDir(h *harness) {
	d := h.mkdir(meta.RootIno, "d")
	var want []string
	for i := range 250 {
		name := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		h.file(d.Ino, name)
		want = append(want, name)
	}
	slices.Sort(want)
	got := h.names(d.Ino)
	eq(h, "listing", strings.Join(got, ","), strings.Join(want, ","))

	ents, more, err := h.api.ReadDir(h.ctx, d.Ino, want[9], 5, true)
	h.wantErr("readdir page", err, nil)
	eq(h, "page len", len(ents), 5)
	eq(h, "more", more, true)
	eq(h, "page start", ents[0].Name, want[10])
	for _, e := range ents {
		if e.Inode == nil || e.Inode.Ino != e.Ino || e.Mode != syscall.S_IFREG|0644 {
			h.t.Fatalf("plus entry %+v", e)
		}
	}
	ents, more, err = h.api.ReadDir(h.ctx, d.Ino, want[len(want)-2], 5, false)
	h.wantErr("readdir end", err, nil)
	eq(h, "end len", len(ents), 1)
	eq(h, "end more", more, false)
	eq(h, "plain mode", ents[0].Mode, uint32(syscall.S_IFREG))
	if ents[0].Inode != nil {
		h.t.Fatal("inode without plus")
	}
	ents, more, err = h.api.ReadDir(h.ctx, d.Ino, want[len(want)-1], 5, false)
	h.wantErr("readdir past end", err, nil)
	eq(h, "past end", len(ents)+btoi(more), 0)
	ents, _, err = h.api.ReadDir(h.ctx, d.Ino, "", 0, false)
	h.wantErr("readdir default limit", err, nil)
	eq(h, "default limit", len(ents), 250)
	empty := h.mkdir(meta.RootIno, "e")
	ents, more, err = h.api.ReadDir(h.ctx, empty.Ino, "", 10, true)
	h.wantErr("readdir empty", err, nil)
	eq(h, "empty", len(ents)+btoi(more), 0)
	f := h.lookup(d.Ino, "a")
	_, _, err = h.api.ReadDir(h.ctx, f.Ino, "", 10, false)
	h.wantErr("readdir of a file", err, meta.ErrNotDir)
	_, _, err = h.api.ReadDir(h.ctx, 4242, "", 10, false)
	h.wantErr("readdir of absent", err, meta.ErrNotFound)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
