package nfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"syscall"

	gonfs "github.com/willscott/go-nfs"
	"github.com/willscott/go-nfs-client/nfs/xdr"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// WRITE and COMMIT are answered here, not by go-nfs (which answers every
// WRITE FILE_SYNC and makes COMMIT a no-op): the gate hands them to
// serveIO (gate.answer). A WRITE checks its handle and caller against the
// attributes as READ does (read.go), a COMMIT too. An UNSTABLE write is buffered in the inode's
// shared handle (vfs.FS.WriteAt without stable) and made durable by
// COMMIT (vfs.FS.Commit); FILE_SYNC and DATA_SYNC commit before the reply.
// Both replies carry the server's write verifier, which changes at every
// start: a client whose UNSTABLE writes were answered with another
// verifier than its COMMIT's sends them again.

const (
	procNFSWrite  = 7
	procNFSCommit = 21
)

// stable_how (RFC 1813 3.3.7).
const (
	unstable = 0
	dataSync = 1
	fileSync = 2
)

// NFSv3 status codes answered here.
const (
	nfsOK          = 0
	nfsErrPerm     = 1
	nfsErrNoEnt    = 2
	nfsErrIO       = 5
	nfsErrAcces    = 13
	nfsErrIsDir    = 21
	nfsErrInval    = 22
	nfsErrFBig     = 27
	nfsErrNoSpc    = 28
	nfsErrROFS     = 30
	nfsErrDQuot    = 69
	nfsErrStale    = 70
	nfsErrJukebox  = 10008
	nfsErrBadHndle = 10001
)

type writeArgs struct {
	Handle []byte
	Offset uint64
	Count  uint32
	How    uint32
	Data   []byte
}

// parseWrite reads WRITE's arguments (bounded by checkArgs); Data is a
// slice of args, not a copy.
func parseWrite(args []byte) (writeArgs, bool) {
	var req writeArgs
	fh, rest, ok := handleArg(args)
	if !ok || len(rest) < 20 {
		return req, false
	}
	req.Handle = fh
	req.Offset = binary.BigEndian.Uint64(rest)
	req.Count = binary.BigEndian.Uint32(rest[8:])
	req.How = binary.BigEndian.Uint32(rest[12:])
	n := binary.BigEndian.Uint32(rest[16:])
	if n > maxIO || uint64(len(rest)-20) < uint64(n) {
		return req, false
	}
	req.Data = rest[20 : 20+n]
	return req, true
}

// serveIO answers the call c the gate serves (gateServes) as cred's caller,
// whose arguments are args (already bounded by checkArgs), and returns the
// reply's body (the procedure's result, after an accepted SUCCESS). It
// keeps nothing of the connection's: calls may run at once (dispatch.go).
func (h *connHandler) serveIO(c call, cred vfs.Cred, args []byte) reply {
	if hook := h.srv.ioHook; hook != nil {
		hook(c.proc)
	}
	switch c.proc {
	case procNFSRead:
		return h.read(cred, args)
	case procNFSWrite:
		return reply{body: h.write(cred, args)}
	case procNFSGetAttr:
		return h.getattr(args)
	case procNFSLookup:
		return h.lookup(cred, args)
	case procNFSAccess:
		return h.access(cred, args)
	case procNFSRemove:
		return h.remove(cred, args)
	case procNFSCreate:
		return h.create(cred, args)
	case procNFSMkdir:
		return h.mkdir(cred, args)
	case procNFSSetAttr:
		return h.setattr(cred, args)
	}
	return reply{body: h.commit(args)}
}

func (h *connHandler) write(cred vfs.Cred, args []byte) []byte {
	req, ok := parseWrite(args)
	if !ok {
		return ioFail(nfsErrInval, nil)
	}
	if h.srv.cfg.ReadOnly {
		return ioFail(nfsErrROFS, nil)
	}
	if req.How > fileSync {
		return ioFail(nfsErrInval, nil)
	}
	data := req.Data
	if uint32(len(data)) > req.Count {
		data = data[:req.Count]
	}
	if req.Offset > math.MaxInt64-uint64(len(data)) {
		return ioFail(nfsErrFBig, nil)
	}
	in, status := h.srv.cachedInode(h.ctx, req.Handle)
	switch {
	case status != nfsOK:
		return ioFail(status, nil)
	case in.IsDir():
		return ioFail(nfsErrIsDir, nil)
	case !in.IsRegular():
		return ioFail(nfsErrInval, nil)
	}
	pre := attrOf(in).AsCache()
	n, err := h.srv.v.WriteAtInode(h.ctx, cred, &in, int64(req.Offset), data, req.How != unstable)
	if err != nil {
		return ioFail(errStatus(err), h.wcc(pre, h.srv.after(in)))
	}
	committed := uint32(unstable)
	if req.How != unstable {
		committed = fileSync // vfs commits the whole file
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	w.Write(h.wcc(pre, h.srv.after(in)))
	put(w, uint32(n))
	put(w, committed)
	put(w, h.srv.verifier)
	return w.Bytes()
}

func (h *connHandler) commit(args []byte) []byte {
	fh, rest, ok := handleArg(args)
	if !ok || len(rest) < 12 { // offset, count: not used (the whole file is committed)
		return ioFail(nfsErrInval, nil)
	}
	if h.srv.cfg.ReadOnly {
		return ioFail(nfsErrROFS, nil)
	}
	// The handle's attributes as WRITE checks them (vfs's attribute
	// cache, under the session's leases): a file removed or changed
	// elsewhere is called back, so this asks the meta service only when
	// the cache cannot answer; the reply's size is the shared handle's
	// (after: Overlay), not the cached one.
	in, status := h.srv.cachedInode(h.ctx, fh)
	if status != nfsOK {
		return ioFail(status, nil)
	}
	if err := h.srv.v.Commit(h.ctx, in.Ino); err != nil {
		return ioFail(errStatus(err), h.wcc(nil, h.srv.after(in)))
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	w.Write(h.wcc(nil, h.srv.after(in)))
	put(w, h.srv.verifier)
	return w.Bytes()
}

// attrOf is in as go-nfs encodes attributes.
func attrOf(in meta.Inode) *gonfs.FileAttribute {
	return gonfs.ToFileAttribute(&fileInfo{in: in}, "")
}

// after is in as this server sees it now: the size and mtime of what it
// wrote and has not committed yet, and of the writes vfs holds for their
// order (vfs.FS.Overlay), without asking the meta service again.
func (s *Server) after(in meta.Inode) *gonfs.FileAttribute {
	s.v.Overlay(&in)
	return attrOf(in)
}

// wcc is a wcc_data: pre (nil: not known) and post.
func (h *connHandler) wcc(pre *gonfs.FileCacheAttribute, post *gonfs.FileAttribute) []byte {
	return appendWcc(make([]byte, 0, 4+24+4+fattrLen), pre, post)
}

// ioFail is a failed WRITE's or COMMIT's result: the status and a
// wcc_data (wcc nil: nothing known).
func ioFail(status uint32, wcc []byte) []byte {
	w := new(bytes.Buffer)
	put(w, status)
	if wcc == nil {
		wcc = []byte{0, 0, 0, 0, 0, 0, 0, 0}
	}
	w.Write(wcc)
	return w.Bytes()
}

// put appends v to a buffer (which cannot fail): a uint32 or an opaque
// written here, anything else by go-nfs-client's reflective encoder.
func put(w *bytes.Buffer, v any) {
	switch v := v.(type) {
	case uint32:
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		w.Write(b[:])
	case []byte:
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(len(v)))
		w.Write(b[:])
		w.Write(v)
		for range (4 - len(v)%4) % 4 {
			w.WriteByte(0)
		}
	default:
		_ = xdr.Write(w, v)
	}
}

// errStatus is the NFS status of an error of vfs (an errno, possibly in
// an *os.PathError).
func errStatus(err error) uint32 {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		if errors.Is(err, os.ErrNotExist) {
			return nfsErrNoEnt
		}
		return nfsErrIO
	}
	switch errno {
	case syscall.EPERM:
		return nfsErrPerm
	case syscall.ENOENT:
		return nfsErrNoEnt
	case syscall.EACCES:
		return nfsErrAcces
	case syscall.EISDIR:
		return nfsErrIsDir
	case syscall.EINVAL:
		return nfsErrInval
	case syscall.EFBIG:
		return nfsErrFBig
	case syscall.ENOSPC:
		return nfsErrNoSpc
	case syscall.EROFS:
		return nfsErrROFS
	case syscall.EDQUOT:
		return nfsErrDQuot
	case syscall.ESTALE:
		return nfsErrStale
	case syscall.EAGAIN:
		return nfsErrJukebox
	case syscall.EEXIST:
		return nfsErrExist
	case syscall.ENOTDIR:
		return nfsErrNotDir
	case syscall.ENAMETOOLONG:
		return nfsErrNameTooLong
	case syscall.ENOTEMPTY:
		return nfsErrNotEmpty
	case syscall.ENOTSUP:
		return nfsErrNotSupp
	}
	return nfsErrIO
}
