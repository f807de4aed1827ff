package nfs

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5"
	nfsfile "github.com/willscott/go-nfs/file"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// billyFS is the file system go-nfs serves one connection, over
// internal/vfs with the credentials of the call being served (the gate's).
// Paths are joined components; the first may name an inode (inoMark), the
// others are looked up from it, or from the export's root.
type billyFS struct {
	conn *connHandler
	base meta.Ino // the root of paths without an inode (0: the export's)
}

var (
	_ billy.Filesystem = (*billyFS)(nil)
	_ billy.Capable    = (*billyFS)(nil)
	_ billy.Change     = (*billyFS)(nil)
)

func (b *billyFS) v() *vfs.FS                 { return b.conn.srv.v }
func (b *billyFS) ctx() context.Context       { return b.conn.callCtx }
func (b *billyFS) cred() vfs.Cred             { return b.conn.gate.cred() }
func (b *billyFS) Join(elem ...string) string { return strings.Join(elem, "/") }
func (b *billyFS) Root() string               { return "/" }

// Capabilities: no locking (NLM is not served); writes unless read-only.
func (b *billyFS) Capabilities() billy.Capability {
	c := billy.ReadCapability | billy.ReadAndWriteCapability | billy.SeekCapability | billy.TruncateCapability
	if !b.conn.srv.cfg.ReadOnly {
		c |= billy.WriteCapability
	}
	return c
}

// pathErr makes err an *os.PathError around its errno, which go-nfs's
// os.IsNotExist and os.IsPermission understand. The path is left out: it
// came from the network.
func pathErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &os.PathError{Op: op, Path: "", Err: errno}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &os.PathError{Op: op, Path: "", Err: syscall.EIO}
	}
	return &os.PathError{Op: op, Path: "", Err: err}
}

// split returns the components of p, without empty ones.
func split(p string) []string {
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// resolve returns the inode path p names, looked up from the longest
// part of it resolved during this call already.
func (b *billyFS) resolve(p string) (meta.Inode, error) {
	prefix := ""
	if b.base != 0 {
		prefix = inoComponent(b.base) + "/"
	}
	if in, ok := b.conn.cached(prefix + p); ok {
		return in, nil
	}
	parts := split(p)
	ino := b.conn.srv.exportIno
	if b.base != 0 {
		ino = b.base
	}
	if len(parts) > 0 {
		if n, ok := parseInoComponent(parts[0]); ok {
			ino, parts = n, parts[1:]
		}
	}
	for _, c := range parts {
		if _, ok := parseInoComponent(c); ok {
			return meta.Inode{}, syscall.EINVAL
		}
	}
	v, ctx, cred := b.v(), b.ctx(), b.cred()
	// The longest prefix of p met during this call (go-nfs resolves a
	// handle, then names in it).
	all := split(p)
	skip := len(all) - len(parts) // an inode component
	var in meta.Inode
	found := false
	for k := len(parts) - 1; k >= 0 && !found; k-- {
		in, found = b.conn.cached(prefix + strings.Join(all[:skip+k], "/"))
		if found {
			parts = parts[k:]
		}
	}
	if !found {
		var err error
		if in, err = v.GetAttr(ctx, ino); err != nil {
			return in, err
		}
	}
	for _, c := range parts {
		var err error
		if in, err = v.Lookup(ctx, cred, in.Ino, c); err != nil {
			return in, err
		}
	}
	b.conn.remember(prefix+p, in)
	return in, nil
}

// parentOf resolves the directory of p and returns it with p's last name.
func (b *billyFS) parentOf(p string) (meta.Inode, string, error) {
	parts := split(p)
	if len(parts) == 0 {
		return meta.Inode{}, "", syscall.EINVAL
	}
	name := parts[len(parts)-1]
	if _, ok := parseInoComponent(name); ok {
		return meta.Inode{}, "", syscall.EINVAL
	}
	dir, err := b.resolve(strings.Join(parts[:len(parts)-1], "/"))
	return dir, name, err
}

func (b *billyFS) Stat(p string) (os.FileInfo, error) {
	in, err := b.resolve(p)
	if err != nil {
		return nil, pathErr("stat", err)
	}
	return &fileInfo{in: in, name: lastName(p)}, nil
}

// Lstat is Stat: paths never follow symlinks here.
func (b *billyFS) Lstat(p string) (os.FileInfo, error) { return b.Stat(p) }

func lastName(p string) string {
	parts := split(p)
	if len(parts) == 0 {
		return "/"
	}
	return parts[len(parts)-1]
}

func (b *billyFS) Create(p string) (billy.File, error) {
	return b.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (b *billyFS) Open(p string) (billy.File, error) { return b.OpenFile(p, os.O_RDONLY, 0) }

// OpenFile returns a file for stateless I/O by inode; O_CREATE makes it
// (exclusively first, so that O_TRUNC truncates only a file that was
// there), O_TRUNC empties an existing one.
func (b *billyFS) OpenFile(p string, flag int, perm os.FileMode) (billy.File, error) {
	v, ctx, cred := b.v(), b.ctx(), b.cred()
	if b.conn.srv.cfg.ReadOnly && flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
		return nil, pathErr("open", syscall.EROFS)
	}
	if flag&os.O_CREATE == 0 {
		in, err := b.resolve(p)
		if err != nil {
			return nil, pathErr("open", err)
		}
		if in.IsDir() && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
			return nil, pathErr("open", syscall.EISDIR)
		}
		// go-nfs opens O_RDWR to write: a write needs write permission
		// only. Checked at open so that the refusal is NFS3ERR_ACCES
		// (go-nfs answers NFS3ERR_IO for a failed read).
		mask := vfs.MayRead
		if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
			mask = vfs.MayWrite
		}
		if in.IsRegular() && !vfs.Permits(cred, &in.Attr, mask) {
			return nil, pathErr("open", syscall.EACCES)
		}
		return &file{fs: b, in: in, name: p}, nil
	}
	dir, name, err := b.parentOf(p)
	if err != nil {
		return nil, pathErr("create", err)
	}
	in, err := v.Create(ctx, cred, meta.CreateReq{Parent: dir.Ino, Name: name, Mode: syscall.S_IFREG | uint32(perm.Perm()), Excl: true})
	if errors.Is(err, syscall.EEXIST) && flag&os.O_EXCL == 0 {
		if in, err = v.Lookup(ctx, cred, dir.Ino, name); err == nil && flag&os.O_TRUNC != 0 && in.IsRegular() {
			in, err = v.SetAttr(ctx, cred, in.Ino, vfs.SetAttr{Valid: meta.SetSize})
		}
	}
	if err != nil {
		return nil, pathErr("create", err)
	}
	b.conn.forget()
	b.conn.remember(p, in)
	return &file{fs: b, in: in, name: p}, nil
}

func (b *billyFS) Rename(from, to string) error {
	fd, fname, err := b.parentOf(from)
	if err != nil {
		return pathErr("rename", err)
	}
	td, tname, err := b.parentOf(to)
	if err != nil {
		return pathErr("rename", err)
	}
	err = b.v().Rename(b.ctx(), b.cred(), fd.Ino, fname, td.Ino, tname, 0)
	b.conn.forget()
	return pathErr("rename", err)
}

// Remove removes a file or an empty directory.
func (b *billyFS) Remove(p string) error {
	dir, name, err := b.parentOf(p)
	if err != nil {
		return pathErr("remove", err)
	}
	in, err := b.resolve(p)
	if err != nil {
		return pathErr("remove", err)
	}
	// What this call resolved answers the permission checks of the
	// removal, and is dropped after it.
	defer b.conn.forget()
	if in.IsDir() {
		return pathErr("rmdir", b.v().Rmdir(b.ctx(), b.cred(), dir.Ino, name))
	}
	return pathErr("remove", b.v().Unlink(b.ctx(), b.cred(), dir.Ino, name))
}

func (b *billyFS) TempFile(dir, prefix string) (billy.File, error) {
	return nil, pathErr("tempfile", syscall.ENOTSUP)
}

// listLimit bounds a directory listed whole for go-nfs, which pages
// through a full listing (cookies are positions in it).
const listLimit = 1 << 20

func (b *billyFS) ReadDir(p string) ([]os.FileInfo, error) {
	d, err := b.resolve(p)
	if err != nil {
		return nil, pathErr("readdir", err)
	}
	if !d.IsDir() {
		return nil, pathErr("readdir", syscall.ENOTDIR)
	}
	var out []os.FileInfo
	after := ""
	for {
		ents, more, err := b.v().ReadDir(b.ctx(), b.cred(), d.Ino, after, 1024, true)
		if err != nil {
			return nil, pathErr("readdir", err)
		}
		for _, e := range ents {
			in := meta.Inode{Attr: meta.Attr{Ino: e.Ino, Mode: e.Mode}}
			if e.Inode != nil {
				in = *e.Inode
				b.v().Overlay(&in)
			}
			b.conn.remember(b.Join(p, e.Name), in)
			out = append(out, &fileInfo{in: in, name: e.Name})
		}
		if !more || len(ents) == 0 {
			return out, nil
		}
		if len(out) >= listLimit {
			return nil, pathErr("readdir", syscall.EFBIG)
		}
		after = ents[len(ents)-1].Name
	}
}

// MkdirAll makes the last directory of p (go-nfs's MKDIR): its parent
// must exist.
func (b *billyFS) MkdirAll(p string, perm os.FileMode) error {
	dir, name, err := b.parentOf(p)
	if err != nil {
		return pathErr("mkdir", err)
	}
	mode := syscall.S_IFDIR | uint32(perm.Perm()) | unixSpecial(perm)
	_, err = b.v().Create(b.ctx(), b.cred(), meta.CreateReq{Parent: dir.Ino, Name: name, Mode: mode, Excl: true})
	b.conn.forget()
	return pathErr("mkdir", err)
}

func (b *billyFS) Symlink(target, link string) error {
	if len(target) > maxPath {
		return pathErr("symlink", syscall.ENAMETOOLONG)
	}
	dir, name, err := b.parentOf(link)
	if err != nil {
		return pathErr("symlink", err)
	}
	_, err = b.v().Create(b.ctx(), b.cred(), meta.CreateReq{Parent: dir.Ino, Name: name, Mode: syscall.S_IFLNK | 0o777, Target: target, Excl: true})
	b.conn.forget()
	return pathErr("symlink", err)
}

func (b *billyFS) Readlink(p string) (string, error) {
	in, err := b.resolve(p)
	if err != nil {
		return "", pathErr("readlink", err)
	}
	t, err := b.v().Readlink(b.ctx(), in.Ino)
	return t, pathErr("readlink", err)
}

func (b *billyFS) Chroot(p string) (billy.Filesystem, error) {
	return nil, pathErr("chroot", syscall.ENOTSUP)
}

// setattr applies s to what p names.
func (b *billyFS) setattr(op, p string, s vfs.SetAttr) error {
	in, err := b.resolve(p)
	if err != nil {
		return pathErr(op, err)
	}
	after, err := b.v().SetAttr(b.ctx(), b.cred(), in.Ino, s)
	if err != nil || s.Valid&meta.SetSize != 0 {
		b.conn.forget()
	} else {
		b.conn.changed(after) // only its attributes changed
	}
	return pathErr(op, err)
}

func (b *billyFS) Chmod(p string, mode os.FileMode) error {
	return b.setattr("chmod", p, vfs.SetAttr{Valid: meta.SetMode, Mode: uint32(mode.Perm()) | unixSpecial(mode)})
}

func (b *billyFS) Lchown(p string, uid, gid int) error {
	if uid < 0 || gid < 0 || uid > 1<<32-1 || gid > 1<<32-1 {
		return pathErr("chown", syscall.EINVAL)
	}
	return b.setattr("chown", p, vfs.SetAttr{Valid: meta.SetUid | meta.SetGid, Uid: uint32(uid), Gid: uint32(gid)})
}

func (b *billyFS) Chown(p string, uid, gid int) error { return b.Lchown(p, uid, gid) }

func (b *billyFS) Chtimes(p string, atime, mtime time.Time) error {
	return b.setattr("utimes", p, vfs.SetAttr{Valid: meta.SetAtime | meta.SetMtime, Atime: atime.UnixNano(), Mtime: mtime.UnixNano()})
}

// Link is go-nfs's LINK (UnixChange).
func (b *billyFS) Link(target, link string) error {
	src, err := b.resolve(target)
	if err != nil {
		return pathErr("link", err)
	}
	dir, name, err := b.parentOf(link)
	if err != nil {
		return pathErr("link", err)
	}
	_, err = b.v().Link(b.ctx(), b.cred(), src.Ino, dir.Ino, name)
	b.conn.forget()
	return pathErr("link", err)
}

// Mknod, Mkfifo and Socket (UnixChange) make special files.
func (b *billyFS) Mknod(p string, mode, major, minor uint32) error {
	return b.mknod(p, mode, major<<8|minor&0xff|(minor&^0xff)<<12)
}

func (b *billyFS) Mkfifo(p string, mode uint32) error {
	return b.mknod(p, syscall.S_IFIFO|mode&0o7777, 0)
}

func (b *billyFS) Socket(p string) error { return b.mknod(p, syscall.S_IFSOCK|0o755, 0) }

func (b *billyFS) mknod(p string, mode, rdev uint32) error {
	dir, name, err := b.parentOf(p)
	if err != nil {
		return pathErr("mknod", err)
	}
	_, err = b.v().Create(b.ctx(), b.cred(), meta.CreateReq{Parent: dir.Ino, Name: name, Mode: mode, Rdev: rdev, Excl: true})
	b.conn.forget()
	return pathErr("mknod", err)
}

// unixSpecial maps Go's set-id and sticky bits to the Unix ones.
func unixSpecial(m os.FileMode) uint32 {
	var u uint32
	if m&os.ModeSetuid != 0 {
		u |= syscall.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		u |= syscall.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		u |= syscall.S_ISVTX
	}
	return u
}

// fileInfo is an inode as go-nfs reads attributes.
type fileInfo struct {
	in   meta.Inode
	name string
}

func (f *fileInfo) Name() string       { return f.name }
func (f *fileInfo) Size() int64        { return int64(f.in.Size) }
func (f *fileInfo) ModTime() time.Time { return time.Unix(0, f.in.Mtime) }
func (f *fileInfo) IsDir() bool        { return f.in.IsDir() }

func (f *fileInfo) Mode() os.FileMode {
	m := os.FileMode(f.in.Mode & 0o777)
	switch f.in.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		m |= os.ModeDir
	case syscall.S_IFLNK:
		m |= os.ModeSymlink
	case syscall.S_IFCHR:
		m |= os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFBLK:
		m |= os.ModeDevice
	case syscall.S_IFIFO:
		m |= os.ModeNamedPipe
	case syscall.S_IFSOCK:
		m |= os.ModeSocket
	}
	return m
}

func (f *fileInfo) Sys() any {
	return nfsfile.FileInfo{
		Nlink: f.in.Nlink, UID: f.in.Uid, GID: f.in.Gid,
		Major: f.in.Rdev >> 8 & 0xfff, Minor: f.in.Rdev&0xff | f.in.Rdev>>12&0xfff00,
		Fileid: uint64(f.in.Ino),
	}
}

// file is an inode opened for stateless I/O (vfs.FS.ReadAt, WriteAt).
type file struct {
	fs   *billyFS
	in   meta.Inode
	name string
	off  int64
}

func (f *file) Name() string { return f.name }

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	n, eof, err := f.fs.v().ReadAt(f.fs.ctx(), f.fs.cred(), f.in.Ino, off, p)
	if err != nil {
		return n, pathErr("read", err)
	}
	if eof && n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *file) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

// Write commits before it returns: go-nfs answers every WRITE FILE_SYNC.
func (f *file) Write(p []byte) (int, error) {
	n, err := f.fs.v().WriteAt(f.fs.ctx(), f.fs.cred(), f.in.Ino, f.off, p, true)
	f.off += int64(n)
	f.fs.conn.forget()
	return n, pathErr("write", err)
}

func (f *file) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += f.off
	default:
		return f.off, pathErr("seek", syscall.EINVAL)
	}
	if off < 0 {
		return f.off, pathErr("seek", syscall.EINVAL)
	}
	f.off = off
	return off, nil
}

func (f *file) Close() error  { return nil }
func (f *file) Lock() error   { return pathErr("lock", syscall.ENOTSUP) }
func (f *file) Unlock() error { return pathErr("unlock", syscall.ENOTSUP) }

func (f *file) Truncate(size int64) error {
	if size < 0 {
		return pathErr("truncate", syscall.EINVAL)
	}
	_, err := f.fs.v().SetAttr(f.fs.ctx(), f.fs.cred(), f.in.Ino, vfs.SetAttr{Valid: meta.SetSize, Size: uint64(size)})
	f.fs.conn.forget()
	return pathErr("truncate", err)
}
