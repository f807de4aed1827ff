package metatest

import (
	"strings"
	"time"

	"tessera/internal/meta"
)

func testXattr(h *harness) {
	f := h.file(meta.RootIno, "f")
	now := h.clock.Advance(time.Second)
	h.wantErr("set", h.api.SetXattr(h.ctx, f.Ino, "user.b", []byte("1"), 0), nil)
	in := h.attr(f.Ino)
	eq(h, "ctime", in.Ctime, now)
	if in.Change <= f.Change {
		h.t.Fatal("setxattr did not bump change")
	}
	v, err := h.api.GetXattr(h.ctx, f.Ino, "user.b")
	h.wantErr("get", err, nil)
	eq(h, "value", string(v), "1")
	h.wantErr("set a", h.api.SetXattr(h.ctx, f.Ino, "user.a", []byte("2"), meta.XattrCreate), nil)
	h.wantErr("set empty", h.api.SetXattr(h.ctx, f.Ino, "user.e", nil, 0), nil)
	v, err = h.api.GetXattr(h.ctx, f.Ino, "user.e")
	h.wantErr("get empty", err, nil)
	eq(h, "empty value", len(v), 0)
	h.wantErr("replace", h.api.SetXattr(h.ctx, f.Ino, "user.a", []byte("3"), meta.XattrReplace), nil)
	v, _ = h.api.GetXattr(h.ctx, f.Ino, "user.a")
	eq(h, "replaced", string(v), "3")
	big := make([]byte, meta.XattrValueMax)
	h.wantErr("set 64k", h.api.SetXattr(h.ctx, f.Ino, "user.big", big, 0), nil)
	v, _ = h.api.GetXattr(h.ctx, f.Ino, "user.big")
	eq(h, "64k", len(v), meta.XattrValueMax)
	names, err := h.api.ListXattr(h.ctx, f.Ino)
	h.wantErr("list", err, nil)
	// The policy inherited from the root is the inode's own, so it is listed.
	eq(h, "list", strings.Join(names, ","), "user.a,user.b,user.big,user.e,"+meta.PolicyXattr)

	long := strings.Repeat("n", meta.XattrNameMax+1)
	for _, c := range []struct {
		what  string
		ino   meta.Ino
		name  string
		value []byte
		flags uint32
		want  error
	}{
		{"create existing", f.Ino, "user.a", nil, meta.XattrCreate, meta.ErrExist},
		{"replace absent", f.Ino, "user.zz", nil, meta.XattrReplace, meta.ErrNoAttr},
		{"both flags", f.Ino, "user.a", nil, meta.XattrCreate | meta.XattrReplace, meta.ErrInvalid},
		{"empty name", f.Ino, "", nil, 0, meta.ErrInvalid},
		{"long name", f.Ino, long, nil, 0, meta.ErrRange},
		{"too big", f.Ino, "user.c", make([]byte, meta.XattrValueMax+1), 0, meta.ErrTooBig},
		{"absent inode", 4242, "user.a", nil, 0, meta.ErrNotFound},
	} {
		h.wantErr("setxattr "+c.what, h.api.SetXattr(h.ctx, c.ino, c.name, c.value, c.flags), c.want)
	}
	for _, c := range []struct {
		what string
		ino  meta.Ino
		name string
		want error
	}{
		{"absent", f.Ino, "user.zz", meta.ErrNoAttr},
		{"empty name", f.Ino, "", meta.ErrInvalid},
		{"long name", f.Ino, long, meta.ErrRange},
		{"absent inode", 4242, "user.a", meta.ErrNotFound},
	} {
		_, err := h.api.GetXattr(h.ctx, c.ino, c.name)
		h.wantErr("getxattr "+c.what, err, c.want)
		h.wantErr("removexattr "+c.what, h.api.RemoveXattr(h.ctx, c.ino, c.name), c.want)
	}
	_, err = h.api.ListXattr(h.ctx, 4242)
	h.wantErr("listxattr absent", err, meta.ErrNotFound)

	before := h.attr(f.Ino)
	now = h.clock.Advance(time.Second)
	h.wantErr("remove", h.api.RemoveXattr(h.ctx, f.Ino, "user.a"), nil)
	in = h.attr(f.Ino)
	eq(h, "remove ctime", in.Ctime, now)
	if in.Change <= before.Change {
		h.t.Fatal("removexattr did not bump change")
	}
	_, err = h.api.GetXattr(h.ctx, f.Ino, "user.a")
	h.wantErr("get removed", err, meta.ErrNoAttr)
	names, _ = h.api.ListXattr(h.ctx, f.Ino)
	eq(h, "list after remove", strings.Join(names, ","), "user.b,user.big,user.e,"+meta.PolicyXattr)
	g := h.file(meta.RootIno, "g")
	names, err = h.api.ListXattr(h.ctx, g.Ino)
	h.wantErr("list fresh", err, nil)
	eq(h, "only the policy", strings.Join(names, ","), meta.PolicyXattr)

	// The policy is validated where it is stored, and the refusal names
	// the valid policies (the message crosses the wire with the errno).
	err = h.api.SetXattr(h.ctx, g.Ino, meta.PolicyXattr, []byte("bogus"), 0)
	h.wantErr("set unknown policy", err, meta.ErrInvalid)
	if err == nil || !strings.Contains(err.Error(), "valid policies are") {
		h.t.Fatalf("unknown policy refused with %v, which lists no valid names", err)
	}
	h.wantErr("set policy", h.api.SetXattr(h.ctx, g.Ino, meta.PolicyXattr, []byte("nfs"), meta.XattrReplace), nil)
	v, err = h.api.GetXattr(h.ctx, g.Ino, meta.PolicyXattr)
	h.wantErr("get policy", err, nil)
	eq(h, "policy", string(v), "nfs")
	eq(h, "policy attr", h.attr(g.Ino).Policy, "nfs")
}

func testStatFS(h *harness) {
	st := h.statfs()
	eq(h, "empty", st, meta.StatFS{Files: 1})
	d := h.mkdir(meta.RootIno, "d")
	f := h.file(d.Ino, "f")
	g := h.file(meta.RootIno, "g")
	h.commit(meta.CommitReq{Ino: f.Ino, Size: 1000})
	h.commit(meta.CommitReq{Ino: g.Ino, Size: 24})
	eq(h, "used", h.statfs(), meta.StatFS{Files: 4, LogicalBytes: 1024})
	_, err := h.api.Unlink(h.ctx, d.Ino, "f", 0)
	h.wantErr("unlink", err, nil)
	eq(h, "orphan counted", h.statfs(), meta.StatFS{Files: 4, LogicalBytes: 1024})
	h.wantErr("reap", h.api.Reap(h.ctx, f.Ino), nil)
	eq(h, "reaped", h.statfs(), meta.StatFS{Files: 3, LogicalBytes: 24})
	h.wantErr("rmdir", h.api.Rmdir(h.ctx, meta.RootIno, "d"), nil)
	eq(h, "rmdir", h.statfs(), meta.StatFS{Files: 2, LogicalBytes: 24})
}
