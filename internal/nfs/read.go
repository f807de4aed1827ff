package nfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// READ is answered here by inode, not by go-nfs (which opens and stats
// the file by path for every READ and copies the data three times into
// its reply): the inode's attributes check the handle (stale or not) and
// the caller's permission (from vfs's attribute cache while the file's
// policy lets them be trusted: lookup.go; a GetAttr otherwise), the read
// goes through vfs's shared handle of the inode (vfs.FS.ReadAtInode: the
// block client's read-ahead follows a sequential reader across calls),
// into a pooled buffer written out as it is (reply.data).

// reply is the result of a call answered by the gate: body, then data
// (nil or a READ's bytes, padded to 4 when written), then buf is given
// back to the pool.
type reply struct {
	body []byte
	data []byte
	buf  *[]byte
}

// readBufs holds READ buffers of maxIO bytes.
var readBufs = sync.Pool{New: func() any { b := make([]byte, maxIO); return &b }}

func (r *reply) release() {
	if r.buf != nil {
		readBufs.Put(r.buf)
		r.buf = nil
	}
}

// read answers READ; args are bounded (checkArgs) and the count clamped
// to maxIO (gate.readRecord).
func (h *connHandler) read(cred vfs.Cred, args []byte) reply {
	fh, rest, ok := handleArg(args)
	if !ok || len(rest) < 12 {
		return reply{body: readFail(nfsErrInval)}
	}
	off := binary.BigEndian.Uint64(rest)
	count := min(binary.BigEndian.Uint32(rest[8:]), maxIO)
	in, status := h.srv.cachedInode(h.ctx, fh)
	switch {
	case status != nfsOK:
		return reply{body: readFail(status)}
	case in.IsDir():
		return reply{body: readFail(nfsErrIsDir)}
	case !in.IsRegular():
		return reply{body: readFail(nfsErrInval)}
	}
	var r reply
	var n int
	eof := true
	if off < in.Size {
		r.buf = readBufs.Get().(*[]byte)
		var err error
		n, eof, err = h.srv.v.ReadAtInode(h.ctx, cred, &in, int64(off), (*r.buf)[:count])
		if err != nil {
			r.release()
			return reply{body: readFail(errStatus(err))}
		}
		r.data = (*r.buf)[:n]
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	putPostOpAttr(w, attrOf(in))
	put(w, uint32(n))
	put(w, boolU32(eof))
	put(w, uint32(n)) // the data's length; the data follows
	r.body = w.Bytes()
	return r
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// readFail is a failed READ's result: the status, no attributes.
func readFail(status uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, status), 0)
}

// handleArg splits a file handle (an XDR opaque, bounded by checkArgs)
// off args.
func handleArg(args []byte) (fh, rest []byte, ok bool) {
	if len(args) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(args)
	end := 4 + (int(n)+3)&^3
	if n > maxHandle || len(args) < end {
		return nil, nil, false
	}
	return args[4 : 4+n], args[end:], true
}

// inodeOf checks a handle as FromHandle does (this cluster and export, an
// inode that exists with the generation named) and returns the inode's
// attributes, fresh from the meta service; anything else is the status
// to answer: BADHANDLE for a handle of the wrong length, STALE otherwise.
// Unlike FromHandle it keeps nothing, so calls may run at once.
func (s *Server) inodeOf(ctx context.Context, fh []byte) (meta.Inode, uint32) {
	return s.inodeOfBy(ctx, fh, s.v.GetAttr)
}

// inodeOfBy is inodeOf with the attributes from get.
func (s *Server) inodeOfBy(ctx context.Context, fh []byte, get func(context.Context, meta.Ino) (meta.Inode, error)) (meta.Inode, uint32) {
	d, err := decodeHandle(fh)
	if err != nil {
		if len(fh) != handleLen {
			return meta.Inode{}, nfsErrBadHndle
		}
		return meta.Inode{}, nfsErrStale
	}
	if d.cluster != s.cfg.ClusterID || d.export != uint64(s.exportIno) {
		return meta.Inode{}, nfsErrStale
	}
	in, err := get(ctx, d.ino)
	if err != nil {
		if errors.Is(err, context.Canceled) || meta.Unavailable(err) {
			return meta.Inode{}, errStatus(err)
		}
		return meta.Inode{}, nfsErrStale
	}
	if d.ino != s.exportIno && (in.Gen != d.gen || in.Nlink == 0) {
		return meta.Inode{}, nfsErrStale
	}
	return in, nfsOK
}
