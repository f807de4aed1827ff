package home

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"syscall"
	"time"

	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	"tessera/internal/vfs"
)

// TesseraStore is a home in a subtree of another Tessera cluster
// (tessera://), reached through its meta service over gRPC with mutual TLS
// and its block servers over HTTPS, with the credentials given.
type TesseraStore struct {
	mc   *metarpc.Client
	cl   *client.Client
	v    *vfs.FS  // the file-system layer every front end shares
	base meta.Ino // the subtree's root
}

// homeCred is the home's caller toward vfs: the gateway itself, which
// the home cluster authorizes by its certificate (client-rw or client-ro);
// no user's permission bits apply, so vfs checks none.
var homeCred = vfs.Cred{Checked: true}

var (
	_ Store     = (*TesseraStore)(nil)
	_ Symlinker = (*TesseraStore)(nil)
	_ Setattrer = (*TesseraStore)(nil)
)

// TesseraOptions are what OpenTessera needs besides the address.
type TesseraOptions struct {
	// Creds are the gateway's credentials toward the home cluster: a
	// client-rw certificate of its CA (client-ro for a read-only fileset).
	Creds *auth.Credentials
	// MetaTimeout bounds the wait for an unreachable home meta service
	// before an operation fails with a retryable error (default 30 s).
	MetaTimeout time.Duration
	Logger      *slog.Logger
}

// OpenTesseraURL opens tessera://META_ADDR/PATH?cert=F&key=F&ca=F.
func OpenTesseraURL(ctx context.Context, u *url.URL) (*TesseraStore, error) {
	q := u.Query()
	cert, key, ca := q.Get("cert"), q.Get("key"), q.Get("ca")
	if cert == "" || key == "" || ca == "" {
		return nil, permanent("open", u.Redacted(), ErrInvalidPath, "want cert=, key= and ca= (the home cluster's client certificate, its key and CA) in the URL")
	}
	creds, err := auth.LoadCredentials(cert, key, ca)
	if err != nil {
		return nil, permanent("open", u.Redacted(), ErrInvalidPath, "credentials: %v", err)
	}
	o := TesseraOptions{Creds: creds}
	if t := q.Get("meta_timeout"); t != "" {
		if o.MetaTimeout, err = time.ParseDuration(t); err != nil {
			return nil, permanent("open", u.Redacted(), ErrInvalidPath, "meta_timeout=%q: %v", t, err)
		}
	}
	return OpenTessera(ctx, u.Host, u.Path, o)
}

// OpenTessera opens the subtree path of the cluster whose meta service is
// at addr; path must be a directory there.
func OpenTessera(ctx context.Context, addr, path string, o TesseraOptions) (*TesseraStore, error) {
	if o.Creds == nil {
		return nil, permanent("open", addr, ErrInvalidPath, "no credentials: a Tessera home is reached over TLS only")
	}
	if o.MetaTimeout == 0 {
		o.MetaTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := clean("open", path)
	if err != nil {
		return nil, err
	}
	mc, err := metarpc.Dial(addr, metarpc.DialOptions{Creds: o.Creds, Token: o.Creds.Token})
	if err != nil {
		return nil, wrap("open", addr, err, true)
	}
	cl, err := client.New(ctx, client.Config{
		Meta: mc, Dial: blockdial.New(o.Creds).Block, Logger: o.Logger,
		MetaTimeout: o.MetaTimeout, MemCacheBytes: 64 << 20, DirtyBytes: 64 << 20,
		IdleRelease: -1,
	})
	if err != nil {
		mc.Close()
		return nil, wrap("open", addr, err, true)
	}
	s := &TesseraStore{mc: mc, cl: cl, base: meta.RootIno, v: vfs.New(cl, vfs.Options{Logger: o.Logger})}
	in, err := s.resolve(ctx, "open", p)
	if err != nil {
		s.Close()
		return nil, err
	}
	if !in.IsDir() {
		s.Close()
		return nil, permanent("open", p, ErrNotDir, "the home path on %s", addr)
	}
	s.base = in.Ino
	return s, nil
}

// terr classifies a Tessera error: meta's errors are errnos (EIO, the
// unreachable service, is retryable).
func terr(op, p string, err error) error {
	if errors.Is(err, syscall.EINTR) {
		return &Error{Op: op, Path: p, Err: err, Retry: true}
	}
	return wrap(op, p, err, true)
}

// resolve looks p up from the base (vfs.FS.Resolve: a symlink in the
// middle of p is followed, within the base, as file:// homes follow them).
func (s *TesseraStore) resolve(ctx context.Context, op, p string) (meta.Inode, error) {
	in, err := s.v.Resolve(ctx, homeCred, s.base, p)
	if err != nil {
		return meta.Inode{}, terr(op, p, err)
	}
	return in, nil
}

// parentOf resolves p's parent directory and returns it with p's name.
func (s *TesseraStore) parentOf(ctx context.Context, op, p string) (meta.Inode, string, error) {
	if p == "" {
		return meta.Inode{}, "", permanent(op, p, ErrInvalidPath, "the home's root")
	}
	dir, name := split(p)
	d, err := s.resolve(ctx, op, dir)
	if err != nil {
		return meta.Inode{}, "", err
	}
	if !d.IsDir() {
		return meta.Inode{}, "", permanent(op, p, ErrNotDir, "%q", dir)
	}
	return d, name, nil
}

func inodeAttr(name string, in meta.Inode) Attr {
	a := Attr{
		Name: name, Mode: in.Mode & 0o7777, Size: int64(in.Size),
		Mtime: time.Unix(0, in.Mtime), Ctime: time.Unix(0, in.Ctime),
		Token: fmt.Sprintf("%d-%d", in.Ino, in.Change), Target: in.Target,
	}
	switch in.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		a.Kind = KindDir
	case syscall.S_IFLNK:
		a.Kind = KindSymlink
	default:
		a.Kind = KindFile
	}
	return a
}

// Stat looks path up.
func (s *TesseraStore) Stat(ctx context.Context, path string) (Attr, error) {
	p, err := clean("stat", path)
	if err != nil {
		return Attr{}, err
	}
	in, err := s.resolve(ctx, "stat", p)
	if err != nil {
		return Attr{}, err
	}
	_, name := split(p)
	return inodeAttr(name, in), nil
}

// ReadDir lists path with attributes (ReadDir plus).
func (s *TesseraStore) ReadDir(ctx context.Context, path string) ([]Attr, error) {
	p, err := clean("readdir", path)
	if err != nil {
		return nil, err
	}
	d, err := s.resolve(ctx, "readdir", p)
	if err != nil {
		return nil, err
	}
	if !d.IsDir() {
		return nil, permanent("readdir", p, ErrNotDir, "")
	}
	var out []Attr
	after := ""
	for {
		ents, more, err := s.v.ReadDir(ctx, homeCred, d.Ino, after, 1024, true)
		if err != nil {
			return nil, terr("readdir", p, err)
		}
		for _, e := range ents {
			after = e.Name
			if strings.HasPrefix(e.Name, tmpPrefix) || strings.HasPrefix(e.Name, vfs.TmpPrefix) {
				continue
			}
			in := e.Inode
			if in == nil {
				got, err := s.v.GetAttr(ctx, e.Ino)
				if err != nil {
					return nil, terr("readdir", p, err)
				}
				in = &got
			}
			out = append(out, inodeAttr(e.Name, *in))
		}
		if !more || len(ents) == 0 {
			return out, nil
		}
	}
}

// open resolves a regular file and opens it; release closes it.
func (s *TesseraStore) open(ctx context.Context, op, p string, flags uint32) (vfs.Opened, error) {
	in, err := s.resolve(ctx, op, p)
	if err != nil {
		return vfs.Opened{}, err
	}
	if in.IsDir() {
		return vfs.Opened{}, permanent(op, p, ErrIsDir, "")
	}
	if !in.IsRegular() {
		return vfs.Opened{}, permanent(op, p, ErrInvalidPath, "not a regular file")
	}
	o, err := s.v.OpenFile(ctx, homeCred, in.Ino, flags)
	if err != nil {
		return vfs.Opened{}, terr(op, p, err)
	}
	return o, nil
}

// release closes o (vfs.FS.Release: what it wrote is committed).
func (s *TesseraStore) release(ctx context.Context, o vfs.Opened) error {
	return s.v.Release(ctx, o.Fh)
}

// ReadAt reads through the client (blocks verified against their hashes).
func (s *TesseraStore) ReadAt(ctx context.Context, path string, b []byte, off int64) (int, error) {
	p, err := clean("read", path)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, permanent("read", p, ErrInvalidPath, "negative offset %d", off)
	}
	o, err := s.open(ctx, "read", p, syscall.O_RDONLY)
	if err != nil {
		return 0, err
	}
	defer s.release(context.WithoutCancel(ctx), o)
	n, err := o.File.Read(ctx, off, b)
	if err != nil {
		return n, terr("read", p, err)
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// WriteFile writes a temporary file in the same directory, commits it and
// renames it over path: atomic.
func (s *TesseraStore) WriteFile(ctx context.Context, path string, r io.Reader, size int64, mode uint32) (Attr, error) {
	p, err := clean("write", path)
	if err != nil {
		return Attr{}, err
	}
	d, name, err := s.parentOf(ctx, "write", p)
	if err != nil {
		return Attr{}, err
	}
	if _, err := s.v.WriteFileAtomic(ctx, homeCred, d.Ino, name, r, size, mode); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// The reader's fault: trying again with it changes nothing.
			return Attr{}, &Error{Op: "write", Path: p, Err: err}
		}
		return Attr{}, terr("write", p, err)
	}
	return s.Stat(ctx, p)
}

// WriteAt writes into an existing file and commits.
func (s *TesseraStore) WriteAt(ctx context.Context, path string, b []byte, off int64) error {
	p, err := clean("write", path)
	if err != nil {
		return err
	}
	if off < 0 {
		return permanent("write", p, ErrInvalidPath, "negative offset %d", off)
	}
	o, err := s.open(ctx, "write", p, syscall.O_WRONLY)
	if err != nil {
		return err
	}
	if _, err := o.File.Write(ctx, off, b); err != nil {
		s.release(context.WithoutCancel(ctx), o)
		return terr("write", p, err)
	}
	if err := o.File.Fsync(ctx); err != nil {
		s.release(context.WithoutCancel(ctx), o)
		return terr("write", p, err)
	}
	return terr("write", p, s.release(ctx, o))
}

// Truncate sets a file's size.
func (s *TesseraStore) Truncate(ctx context.Context, path string, size int64) error {
	p, err := clean("truncate", path)
	if err != nil {
		return err
	}
	if size < 0 {
		return permanent("truncate", p, ErrInvalidPath, "negative size %d", size)
	}
	in, err := s.resolve(ctx, "truncate", p)
	if err != nil {
		return err
	}
	if in.IsDir() {
		return permanent("truncate", p, ErrIsDir, "")
	}
	_, err = s.v.SetAttr(ctx, homeCred, in.Ino, vfs.SetAttr{Valid: meta.SetSize, Size: uint64(size)})
	return terr("truncate", p, err)
}

func (s *TesseraStore) create(ctx context.Context, op, p string, mode uint32, target string) error {
	d, name, err := s.parentOf(ctx, op, p)
	if err != nil {
		if errors.Is(err, ErrInvalidPath) && p == "" {
			return permanent(op, p, ErrExist, "")
		}
		return err
	}
	_, err = s.v.Create(ctx, homeCred, meta.CreateReq{Parent: d.Ino, Name: name, Mode: mode, Target: target, Excl: true})
	return terr(op, p, err)
}

// Create makes an empty file.
func (s *TesseraStore) Create(ctx context.Context, path string, mode uint32) error {
	p, err := clean("create", path)
	if err != nil {
		return err
	}
	if mode == 0 {
		mode = 0o644
	}
	return s.create(ctx, "create", p, syscall.S_IFREG|mode&0o7777, "")
}

// Mkdir makes a directory.
func (s *TesseraStore) Mkdir(ctx context.Context, path string, mode uint32) error {
	p, err := clean("mkdir", path)
	if err != nil {
		return err
	}
	if mode == 0 {
		mode = 0o755
	}
	return s.create(ctx, "mkdir", p, syscall.S_IFDIR|mode&0o7777, "")
}

// Symlink makes a symlink.
func (s *TesseraStore) Symlink(ctx context.Context, target, path string) error {
	p, err := clean("symlink", path)
	if err != nil {
		return err
	}
	return s.create(ctx, "symlink", p, syscall.S_IFLNK|0o777, target)
}

// Readlink returns a symlink's target.
func (s *TesseraStore) Readlink(ctx context.Context, path string) (string, error) {
	p, err := clean("readlink", path)
	if err != nil {
		return "", err
	}
	in, err := s.resolve(ctx, "readlink", p)
	if err != nil {
		return "", err
	}
	if in.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		return "", permanent("readlink", p, ErrInvalidPath, "not a symlink")
	}
	return in.Target, nil
}

// Remove unlinks a file or symlink.
func (s *TesseraStore) Remove(ctx context.Context, path string) error {
	p, err := clean("remove", path)
	if err != nil {
		return err
	}
	d, name, err := s.parentOf(ctx, "remove", p)
	if err != nil {
		return err
	}
	in, err := s.v.Lookup(ctx, homeCred, d.Ino, name)
	if err != nil {
		return terr("remove", p, err)
	}
	if in.IsDir() {
		return permanent("remove", p, ErrIsDir, "")
	}
	return terr("remove", p, s.v.Unlink(ctx, homeCred, d.Ino, name))
}

// Rmdir removes an empty directory.
func (s *TesseraStore) Rmdir(ctx context.Context, path string) error {
	p, err := clean("rmdir", path)
	if err != nil {
		return err
	}
	d, name, err := s.parentOf(ctx, "rmdir", p)
	if err != nil {
		return err
	}
	in, err := s.v.Lookup(ctx, homeCred, d.Ino, name)
	if err != nil {
		return terr("rmdir", p, err)
	}
	if !in.IsDir() {
		return permanent("rmdir", p, ErrNotDir, "")
	}
	return terr("rmdir", p, s.v.Rmdir(ctx, homeCred, d.Ino, name))
}

// Rename renames atomically (one meta transaction).
func (s *TesseraStore) Rename(ctx context.Context, from, to string) error {
	f, err := clean("rename", from)
	if err != nil {
		return err
	}
	t, err := clean("rename", to)
	if err != nil {
		return err
	}
	fd, fname, err := s.parentOf(ctx, "rename", f)
	if err != nil {
		return err
	}
	td, tname, err := s.parentOf(ctx, "rename", t)
	if err != nil {
		return err
	}
	return terr("rename", f, s.v.Rename(ctx, homeCred, fd.Ino, fname, td.Ino, tname, 0))
}

// Chmod sets permission bits.
func (s *TesseraStore) Chmod(ctx context.Context, path string, mode uint32) error {
	return s.setattr(ctx, "chmod", path, vfs.SetAttr{Valid: meta.SetMode, Mode: mode & 0o7777})
}

// Chtimes sets times; a zero time is left alone.
func (s *TesseraStore) Chtimes(ctx context.Context, path string, atime, mtime time.Time) error {
	var req vfs.SetAttr
	if !atime.IsZero() {
		req.Valid |= meta.SetAtime
		req.Atime = atime.UnixNano()
	}
	if !mtime.IsZero() {
		req.Valid |= meta.SetMtime
		req.Mtime = mtime.UnixNano()
	}
	return s.setattr(ctx, "chtimes", path, req)
}

func (s *TesseraStore) setattr(ctx context.Context, op, path string, req vfs.SetAttr) error {
	p, err := clean(op, path)
	if err != nil {
		return err
	}
	in, err := s.resolve(ctx, op, p)
	if err != nil {
		return err
	}
	if req.Valid == 0 {
		return nil
	}
	_, err = s.v.SetAttr(ctx, homeCred, in.Ino, req)
	return terr(op, p, err)
}

// Close closes the client and the connection.
func (s *TesseraStore) Close() error {
	s.v.Close()
	err := s.cl.Close(context.Background())
	if cerr := s.mc.Close(); err == nil {
		err = cerr
	}
	return err
}
