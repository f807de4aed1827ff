package nfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"syscall"

	gonfs "github.com/willscott/go-nfs"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// GETATTR, LOOKUP, ACCESS and REMOVE are answered here by inode, like
// READ, not by go-nfs (which turns the handle into a path, stats it, and
// resolves and stats the name again, one call of a connection at a time):
// the handle's inode comes from vfs's attribute cache
// (vfs.FS.GetAttrCached: trusted as long as a FUSE mount's kernel may
// trust the same attributes, dropped by every change this server makes;
// a directory's identity and permissions, which LOOKUP and REMOVE check,
// kept across the entries this server adds and removes:
// vfs.FS.IdentityCached; a regular file's only while this server hears
// of other clients' changes of it: open here, or leased), so a LOOKUP is one meta call (the name), a GETATTR or an ACCESS
// none while the attributes are fresh, a REMOVE one
// (the unlink, named by the inode the name was last looked up to; two
// when it was not). The directory's attributes are sent when current. The gate serves them several at
// once, ordered as dispatch.go says. LOOKUP of "." and ".." stays with
// go-nfs.

const (
	procNFSGetAttr = 1
	procNFSLookup  = 3
	procNFSAccess  = 4
	procNFSRemove  = 12
)

// ACCESS3 bits (RFC 1813 3.3.4).
const (
	access3Read    = 0x01
	access3Lookup  = 0x02
	access3Modify  = 0x04
	access3Extend  = 0x08
	access3Delete  = 0x10
	access3Execute = 0x20
)

// nfsErrNotDir is NFS3ERR_NOTDIR.
const nfsErrNotDir = 20

// nameArg splits a file name (an XDR string, bounded by checkArgs) off
// args.
func nameArg(args []byte) (string, []byte, bool) {
	if len(args) < 4 {
		return "", nil, false
	}
	n := binary.BigEndian.Uint32(args)
	end := 4 + (int(n)+3)&^3
	if n > maxName || len(args) < end {
		return "", nil, false
	}
	return string(args[4 : 4+n]), args[end:], true
}

// dotName reports whether a LOOKUP's arguments name "." or "..", which go-nfs
// answers (false for arguments that do not parse: the gate answers those).
func dotName(args []byte) bool {
	_, rest, ok := handleArg(args)
	if !ok {
		return false
	}
	name, _, ok := nameArg(rest)
	return ok && (name == "." || name == "..")
}

// cachedInode is inodeOf answered from vfs's attribute cache.
func (s *Server) cachedInode(ctx context.Context, fh []byte) (meta.Inode, uint32) {
	return s.inodeOfBy(ctx, fh, s.v.GetAttrCached)
}

// cachedDir is cachedInode for the directory of a LOOKUP or a REMOVE,
// whose identity and permissions are what is checked: also from
// attributes whose times this server changed since (vfs.IdentityCached);
// whole says whether the rest is current, to be sent.
func (s *Server) cachedDir(ctx context.Context, fh []byte) (dir meta.Inode, whole bool, st uint32) {
	dir, st = s.inodeOfBy(ctx, fh, func(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
		in, w, err := s.v.IdentityCached(ctx, ino)
		whole = w
		return in, err
	})
	return dir, whole, st
}

// ifWhole is &in if whole, else nil (attributes not sent).
func ifWhole(in *meta.Inode, whole bool) *meta.Inode {
	if whole {
		return in
	}
	return nil
}

// getattr answers GETATTR: the attributes, or the status alone.
func (h *connHandler) getattr(args []byte) reply {
	fh, _, ok := handleArg(args)
	if !ok {
		return reply{body: status(nfsErrInval)}
	}
	in, st := h.srv.cachedInode(h.ctx, fh)
	if st != nfsOK {
		return reply{body: status(st)}
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	putFattr(w, attrOf(in))
	return reply{body: w.Bytes()}
}

// lookup answers LOOKUP of a name in a directory (search permission on it
// needed): the entry's handle and attributes, and the directory's.
func (h *connHandler) lookup(cred vfs.Cred, args []byte) reply {
	fh, rest, ok := handleArg(args)
	if !ok {
		return reply{body: opAttrFail(nfsErrInval, nil)}
	}
	name, _, ok := nameArg(rest)
	if !ok {
		return reply{body: opAttrFail(nfsErrInval, nil)}
	}
	dir, whole, st := h.srv.cachedDir(h.ctx, fh)
	switch {
	case st != nfsOK:
		return reply{body: opAttrFail(st, nil)}
	case !dir.IsDir():
		return reply{body: opAttrFail(nfsErrNotDir, ifWhole(&dir, whole))}
	}
	in, err := h.srv.v.Lookup(freshOne(h.ctx, dir), cred, dir.Ino, name)
	if err != nil {
		return reply{body: opAttrFail(errStatus(err), ifWhole(&dir, whole))}
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	put(w, h.srv.handle(in.Ino, in.Gen))
	putPostOpAttr(w, attrOf(in))
	var da *gonfs.FileAttribute
	if whole {
		da = attrOf(dir)
	}
	putPostOpAttr(w, da)
	return reply{body: w.Bytes()}
}

// access answers ACCESS: of the bits asked, those the caller's
// permissions on the inode grant (as Linux's server maps them), none that
// change a regular file, a directory or a symlink on a read-only server
// (--read-only, or an identity that may only read) or in a read-only
// fileset (what access(2) answers EROFS: vfs.FS.ReadOnlyAt).
func (h *connHandler) access(cred vfs.Cred, args []byte) reply {
	fh, rest, ok := handleArg(args)
	if !ok || len(rest) < 4 {
		return reply{body: opAttrFail(nfsErrInval, nil)}
	}
	asked := binary.BigEndian.Uint32(rest)
	in, st := h.srv.cachedInode(h.ctx, fh)
	if st != nfsOK {
		return reply{body: opAttrFail(st, nil)}
	}
	granted := grants(cred, &in, asked)
	if granted&(access3Modify|access3Extend|access3Delete) != 0 && h.srv.readOnlyAt(h.ctx, &in) {
		granted &^= access3Modify | access3Extend | access3Delete
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	putPostOpAttr(w, attrOf(in))
	put(w, granted)
	return reply{body: w.Bytes()}
}

// grants returns the ACCESS3 bits of asked that cred's permissions on in
// grant: on a directory READ (list), LOOKUP (search), MODIFY, EXTEND and
// DELETE (write and search); on anything else READ, MODIFY and EXTEND
// (write), EXECUTE. The caller's credentials are checked as sent
// (squashed), root by the rules vfs applies to it.
func grants(cred vfs.Cred, in *meta.Inode, asked uint32) uint32 {
	cred.Checked = false
	may := func(mask uint32) bool { return vfs.Permits(cred, &in.Attr, mask) }
	var g uint32
	if in.IsDir() {
		if may(vfs.MayRead) {
			g |= access3Read
		}
		if may(vfs.MayExec) {
			g |= access3Lookup
		}
		if may(vfs.MayWrite | vfs.MayExec) {
			g |= access3Modify | access3Extend | access3Delete
		}
	} else {
		if may(vfs.MayRead) {
			g |= access3Read
		}
		if may(vfs.MayWrite) {
			g |= access3Modify | access3Extend
		}
		if may(vfs.MayExec) {
			g |= access3Execute
		}
	}
	return g & asked
}

// remove answers REMOVE of a non-directory (write and search permission
// on its directory needed, and the sticky rule). The directory's
// attributes after it are left out (post_op_attr is optional): the
// client asks for them when it needs them.
func (h *connHandler) remove(cred vfs.Cred, args []byte) reply {
	fh, rest, ok := handleArg(args)
	if !ok {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	name, _, ok := nameArg(rest)
	if !ok {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	if h.srv.cfg.ReadOnly {
		return reply{body: ioFail(nfsErrROFS, nil)}
	}
	dir, whole, st := h.srv.cachedDir(h.ctx, fh)
	switch {
	case st != nfsOK:
		return reply{body: ioFail(st, nil)}
	case !dir.IsDir():
		return reply{body: ioFail(nfsErrNotDir, nil)}
	}
	var pre *gonfs.FileCacheAttribute // the directory's before: only when current
	if whole {
		pre = attrOf(dir).AsCache()
	}
	if err := h.srv.v.Unlink(freshOne(h.ctx, dir), cred, dir.Ino, name); err != nil {
		return reply{body: ioFail(errStatus(err), h.wcc(pre, nil))}
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	w.Write(h.wcc(pre, nil))
	return reply{body: w.Bytes()}
}

// readOnlyAt reports whether in may not be changed through this server as
// a read-only file system's (ACCESS grants no change of it).
func (s *Server) readOnlyAt(ctx context.Context, in *meta.Inode) bool {
	if s.cfg.ReadOnly {
		switch in.Mode & syscall.S_IFMT {
		case syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK:
			return true
		}
		return false
	}
	return s.v.ReadOnlyAt(ctx, in)
}

// freshOne is ctx with in as the attributes of its inode fetched for this
// call (vfs.WithFresh): vfs's directory checks take them.
func freshOne(ctx context.Context, in meta.Inode) context.Context {
	return vfs.WithFresh(ctx, func(ino meta.Ino) (meta.Inode, bool) {
		return in, ino == in.Ino
	})
}

// status is a result of the status alone.
func status(st uint32) []byte { return binary.BigEndian.AppendUint32(nil, st) }

// opAttrFail is a failed result made of the status and a post_op_attr
// (in nil: none).
func opAttrFail(st uint32, in *meta.Inode) []byte {
	w := new(bytes.Buffer)
	put(w, st)
	var a *gonfs.FileAttribute
	if in != nil {
		a = attrOf(*in)
	}
	putPostOpAttr(w, a)
	return w.Bytes()
}
