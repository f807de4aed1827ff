package nfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	gonfs "github.com/willscott/go-nfs"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// CREATE, MKDIR and SETATTR are answered here by inode, like LOOKUP and
// REMOVE (lookup.go), not by go-nfs, which turns the handle into a path,
// stats the name, the directory and the new file again and applies the
// mode with a second change (five meta calls for a CREATE), and serves
// one call of a connection at a time. Here a CREATE or MKDIR is one meta
// call (the create, with the mode asked; the directory's identity from
// vfs's attribute cache), a SETATTR one (the change) once the handle's
// attributes are known. They run several at once per connection, ordered
// per directory (dispatch.go: a CREATE or MKDIR waits for the calls
// before it on its directory, a SETATTR for those on its inode).
//
// CREATE's modes (RFC 1813 3.3.8): GUARDED fails with NFS3ERR_EXIST when
// the name exists; UNCHECKED then returns the file there (a regular file
// only: anything else is NFS3ERR_EXIST), applying of the attributes asked
// only the size, as Linux's server does; EXCLUSIVE is refused with
// NFS3ERR_NOTSUPP as go-nfs did (clients fall back to GUARDED).

const (
	procNFSSetAttr = 2
	procNFSCreate  = 8
	procNFSMkdir   = 9
)

// CREATE's createmode3.
const (
	createUnchecked = 0
	createGuarded   = 1
	createExclusive = 2
)

// More NFSv3 status codes.
const (
	nfsErrExist       = 17
	nfsErrNameTooLong = 63
	nfsErrNotEmpty    = 66
	nfsErrNotSync     = 10002
	nfsErrNotSupp     = 10004
)

// defaultFileMode and defaultDirMode are the permissions of a file or
// directory made without a mode asked (go-nfs's: 0666 before the
// client's umask, which a client applies itself; 0755).
const (
	defaultFileMode = 0o666
	defaultDirMode  = 0o755
)

// time_how of sattr3.
const (
	dontChange      = 0
	setToServerTime = 1
	setToClientTime = 2
)

// parseSattr reads a sattr3 (RFC 1813 2.6) from r as a vfs.SetAttr; an
// error names the field that is wrong.
func parseSattr(r *xr) (vfs.SetAttr, error) {
	var s vfs.SetAttr
	flag := func(what string) (bool, error) {
		v, err := r.u32()
		if err != nil {
			return false, fmt.Errorf("sattr3 %s: %w", what, err)
		}
		if v > 1 {
			return false, fmt.Errorf("sattr3 %s: set_it %d is not a bool", what, v)
		}
		return v == 1, nil
	}
	for _, f := range []struct {
		what string
		bit  uint32
		to   *uint32
	}{{"mode", meta.SetMode, &s.Mode}, {"uid", meta.SetUid, &s.Uid}, {"gid", meta.SetGid, &s.Gid}} {
		set, err := flag(f.what)
		if err != nil {
			return s, err
		}
		if set {
			if *f.to, err = r.u32(); err != nil {
				return s, fmt.Errorf("sattr3 %s: %w", f.what, err)
			}
			s.Valid |= f.bit
		}
	}
	s.Mode &= 0o7777
	set, err := flag("size")
	if err != nil {
		return s, err
	}
	if set {
		hi, err := r.u32()
		if err != nil {
			return s, fmt.Errorf("sattr3 size: %w", err)
		}
		lo, err := r.u32()
		if err != nil {
			return s, fmt.Errorf("sattr3 size: %w", err)
		}
		s.Size = uint64(hi)<<32 | uint64(lo)
		s.Valid |= meta.SetSize
	}
	for _, f := range []struct {
		what string
		bit  uint32
		at   *int64
		now  *bool
	}{{"atime", meta.SetAtime, &s.Atime, &s.AtimeNow}, {"mtime", meta.SetMtime, &s.Mtime, &s.MtimeNow}} {
		how, err := r.u32()
		if err != nil {
			return s, fmt.Errorf("sattr3 %s: %w", f.what, err)
		}
		switch how {
		case dontChange:
		case setToServerTime:
			s.Valid |= f.bit
			*f.now = true
		case setToClientTime:
			sec, err := r.u32()
			if err != nil {
				return s, fmt.Errorf("sattr3 %s: %w", f.what, err)
			}
			nsec, err := r.u32()
			if err != nil {
				return s, fmt.Errorf("sattr3 %s: %w", f.what, err)
			}
			if nsec >= 1e9 {
				return s, fmt.Errorf("sattr3 %s: %d nanoseconds (below 10^9)", f.what, nsec)
			}
			s.Valid |= f.bit
			*f.at = int64(sec)*1e9 + int64(nsec)
		default:
			return s, fmt.Errorf("sattr3 %s: time_how %d", f.what, how)
		}
	}
	return s, nil
}

// dirOp reads a diropargs3 (a directory's handle and a name) off args.
func dirOp(args []byte) (fh []byte, name string, rest []byte, ok bool) {
	fh, rest, ok = handleArg(args)
	if !ok {
		return nil, "", nil, false
	}
	name, rest, ok = nameArg(rest)
	return fh, name, rest, ok
}

// createResult is a successful CREATE's or MKDIR's result: the new
// inode's handle and attributes, the directory's wcc_data (its attributes
// before when current; none after: the client asks when it needs them).
func (h *connHandler) createResult(in meta.Inode, pre *gonfs.FileCacheAttribute) reply {
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	put(w, uint32(1)) // post_op_fh3: handle follows
	put(w, h.srv.handle(in.Ino, in.Gen))
	putPostOpAttr(w, attrOf(in))
	w.Write(h.wcc(pre, nil))
	return reply{body: w.Bytes()}
}

// namedDir checks a CREATE's or MKDIR's directory: its inode from the
// attribute cache (identity and permissions), and its attributes before
// the change when they are current.
func (h *connHandler) namedDir(fh []byte) (meta.Inode, *gonfs.FileCacheAttribute, uint32) {
	if h.srv.cfg.ReadOnly {
		return meta.Inode{}, nil, nfsErrROFS
	}
	dir, whole, st := h.srv.cachedDir(h.ctx, fh)
	switch {
	case st != nfsOK:
		return dir, nil, st
	case !dir.IsDir():
		return dir, nil, nfsErrNotDir
	}
	var pre *gonfs.FileCacheAttribute
	if whole {
		pre = attrOf(dir).AsCache()
	}
	return dir, pre, nfsOK
}

// create answers CREATE of a regular file.
func (h *connHandler) create(cred vfs.Cred, args []byte) reply {
	fh, name, rest, ok := dirOp(args)
	if !ok {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	r := &xr{b: rest}
	how, err := r.u32()
	if err != nil || how > createExclusive {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	if how == createExclusive {
		return reply{body: ioFail(nfsErrNotSupp, nil)}
	}
	s, err := parseSattr(r)
	if err != nil {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	dir, pre, st := h.namedDir(fh)
	if st != nfsOK {
		return reply{body: ioFail(st, nil)}
	}
	ctx := freshOne(h.ctx, dir)
	mode := uint32(defaultFileMode)
	if s.Valid&meta.SetMode != 0 {
		mode = s.Mode
	}
	in, err := h.srv.v.Create(ctx, cred, meta.CreateReq{Parent: dir.Ino, Name: name, Mode: syscall.S_IFREG | mode, Excl: true})
	switch {
	case errors.Is(err, syscall.EEXIST) && how == createUnchecked:
		// The file there, with only the size asked applied (Linux's
		// server does the same: the rest is for a file made here).
		if in, err = h.srv.v.Lookup(ctx, cred, dir.Ino, name); err == nil && !in.IsRegular() {
			err = syscall.EEXIST
		}
		if err == nil && s.Valid&meta.SetSize != 0 {
			in, err = h.srv.v.SetAttr(h.ctx, cred, in.Ino, vfs.SetAttr{Valid: meta.SetSize, Size: s.Size})
		}
	case err == nil:
		in, err = h.applyRest(cred, in, s)
	}
	if err != nil {
		return reply{body: ioFail(errStatus(err), h.wcc(pre, nil))}
	}
	return h.createResult(in, pre)
}

// applyRest applies to in, just made with the mode s asks, what else s
// asks: an owner or group other than the caller's, a size, a time the
// client gives (the server's time is what a new inode has).
func (h *connHandler) applyRest(cred vfs.Cred, in meta.Inode, s vfs.SetAttr) (meta.Inode, error) {
	s.Valid &^= meta.SetMode
	if s.Valid&meta.SetUid != 0 && s.Uid == in.Uid {
		s.Valid &^= meta.SetUid
	}
	if s.Valid&meta.SetGid != 0 && s.Gid == in.Gid {
		s.Valid &^= meta.SetGid
	}
	if s.Valid&meta.SetSize != 0 && s.Size == 0 {
		s.Valid &^= meta.SetSize
	}
	if s.AtimeNow {
		s.Valid &^= meta.SetAtime
	}
	if s.MtimeNow {
		s.Valid &^= meta.SetMtime
	}
	if s.Valid == 0 {
		return in, nil
	}
	return h.srv.v.SetAttr(freshOne(h.ctx, in), cred, in.Ino, s)
}

// mkdir answers MKDIR.
func (h *connHandler) mkdir(cred vfs.Cred, args []byte) reply {
	fh, name, rest, ok := dirOp(args)
	if !ok {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	s, err := parseSattr(&xr{b: rest})
	if err != nil {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	dir, pre, st := h.namedDir(fh)
	if st != nfsOK {
		return reply{body: ioFail(st, nil)}
	}
	mode := uint32(defaultDirMode)
	if s.Valid&meta.SetMode != 0 {
		mode = s.Mode
	}
	in, err := h.srv.v.Create(freshOne(h.ctx, dir), cred, meta.CreateReq{Parent: dir.Ino, Name: name, Mode: syscall.S_IFDIR | mode, Excl: true})
	if err == nil {
		in, err = h.applyRest(cred, in, s)
	}
	if err != nil {
		return reply{body: ioFail(errStatus(err), h.wcc(pre, nil))}
	}
	return h.createResult(in, pre)
}

// setattr answers SETATTR: the change checked against the handle's
// attributes (from vfs's attribute cache; fresh from the meta service for
// a change of size), and the guard's ctime against them (NFS3ERR_NOT_SYNC
// when it differs).
func (h *connHandler) setattr(cred vfs.Cred, args []byte) reply {
	fh, rest, ok := handleArg(args)
	if !ok {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	r := &xr{b: rest}
	s, err := parseSattr(r)
	if err != nil {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	guard, err := r.u32()
	if err != nil || guard > 1 {
		return reply{body: ioFail(nfsErrInval, nil)}
	}
	var ctime gonfs.FileTime
	if guard == 1 {
		if ctime.Seconds, err = r.u32(); err == nil {
			ctime.Nseconds, err = r.u32()
		}
		if err != nil {
			return reply{body: ioFail(nfsErrInval, nil)}
		}
	}
	get := h.srv.cachedInode
	if s.Valid&meta.SetSize != 0 {
		get = h.srv.inodeOf // a truncate starts from the size as it is
	}
	in, st := get(h.ctx, fh)
	if st != nfsOK {
		return reply{body: ioFail(st, nil)}
	}
	a := attrOf(in)
	pre := a.AsCache()
	if guard == 1 && a.Ctime != ctime {
		return reply{body: ioFail(nfsErrNotSync, h.wcc(pre, a))}
	}
	if h.srv.cfg.ReadOnly {
		return reply{body: ioFail(nfsErrROFS, h.wcc(pre, a))}
	}
	if s.Valid&meta.SetSize != 0 && !in.IsRegular() && !in.IsDir() {
		return reply{body: ioFail(nfsErrInval, h.wcc(pre, a))}
	}
	out, err := h.srv.v.SetAttr(freshOne(h.ctx, in), cred, in.Ino, s)
	if err != nil {
		return reply{body: ioFail(errStatus(err), h.wcc(pre, nil))}
	}
	w := new(bytes.Buffer)
	put(w, uint32(nfsOK))
	w.Write(h.wcc(pre, attrOf(out)))
	return reply{body: w.Bytes()}
}

// createHow returns a CREATE's mode, and whether it is UNCHECKED with a
// size asked (it may truncate a file that is there: dispatch.go orders
// it as a REMOVE).
func createHow(args []byte) (how uint32, size bool) {
	_, _, rest, ok := dirOp(args)
	if !ok || len(rest) < 4 {
		return 0, false
	}
	how = binary.BigEndian.Uint32(rest)
	if how != createUnchecked {
		return how, false
	}
	s, err := parseSattr(&xr{b: rest[4:]})
	return how, err == nil && s.Valid&meta.SetSize != 0
}
