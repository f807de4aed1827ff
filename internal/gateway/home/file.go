package home

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
)

// tmpPrefix starts the names of WriteFile's temporary files; ReadDir does
// not list them.
const tmpPrefix = ".tessera-home-tmp."

// FileStore is a home in a local directory (file://). Every access goes
// through an os.Root, so no path, and no symlink at home, reaches outside
// the directory: such a symlink is listed and can be read with Readlink,
// but following it fails with ErrPermission.
type FileStore struct {
	dir   string
	root  *os.Root
	sweep sweeper // filetmp.go
}

var (
	_ Store     = (*FileStore)(nil)
	_ Symlinker = (*FileStore)(nil)
	_ Setattrer = (*FileStore)(nil)
)

// OpenFile opens the home in directory dir, which must exist.
func OpenFile(dir string) (*FileStore, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, wrap("open", dir, err, false)
	}
	if !st.IsDir() {
		return nil, permanent("open", dir, ErrNotDir, "")
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, wrap("open", dir, err, false)
	}
	return &FileStore{dir: dir, root: r}, nil
}

// rel turns a cleaned home path into os.Root's name for it.
func rel(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// ferr classifies an os error; os.Root's refusal of a path that escapes
// (a symlink pointing outward) is not an errno, and becomes ErrPermission.
func ferr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) && strings.Contains(err.Error(), "escapes") {
		return permanent(op, p, ErrPermission, "%v", err)
	}
	return wrap(op, p, err, true)
}

func fileAttr(name string, fi fs.FileInfo) Attr {
	a := Attr{Name: name, Mode: uint32(fi.Mode().Perm()), Size: fi.Size(), Mtime: fi.ModTime()}
	switch {
	case fi.IsDir():
		a.Kind = KindDir
	case fi.Mode()&fs.ModeSymlink != 0:
		a.Kind = KindSymlink
	default:
		a.Kind = KindFile
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		a.Ctime = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
		ino = st.Ino
		a.Mode = st.Mode & 0o7777
	}
	a.Token = fmt.Sprintf("%x-%x-%x-%x", ino, a.Size, a.Mtime.UnixNano(), a.Ctime.UnixNano())
	return a
}

// Stat returns path's attributes (lstat).
func (s *FileStore) Stat(ctx context.Context, path string) (Attr, error) {
	p, err := clean("stat", path)
	if err != nil {
		return Attr{}, err
	}
	fi, err := s.root.Lstat(rel(p))
	if err != nil {
		return Attr{}, ferr("stat", p, err)
	}
	_, name := split(p)
	a := fileAttr(name, fi)
	if a.Kind == KindSymlink {
		a.Target, _ = s.root.Readlink(rel(p))
	}
	return a, nil
}

// ReadDir lists path.
func (s *FileStore) ReadDir(ctx context.Context, path string) ([]Attr, error) {
	p, err := clean("readdir", path)
	if err != nil {
		return nil, err
	}
	f, err := s.root.Open(rel(p))
	if err != nil {
		return nil, ferr("readdir", p, err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, ferr("readdir", p, err)
	}
	out := make([]Attr, 0, len(ents))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		child := join(p, e.Name())
		fi, err := s.root.Lstat(child)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, ferr("readdir", child, err)
		}
		a := fileAttr(e.Name(), fi)
		if a.Kind == KindSymlink {
			a.Target, _ = s.root.Readlink(child)
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// ReadAt reads from a file.
func (s *FileStore) ReadAt(ctx context.Context, path string, b []byte, off int64) (int, error) {
	p, err := clean("read", path)
	if err != nil {
		return 0, err
	}
	f, err := s.root.Open(rel(p))
	if err != nil {
		return 0, ferr("read", p, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return 0, permanent("read", p, ErrIsDir, "")
	}
	n, err := f.ReadAt(b, off)
	if err == io.EOF {
		return n, io.EOF
	}
	return n, ferr("read", p, err)
}

// WriteFile writes a temporary file beside path and renames it over,
// holding a lock on it meanwhile; the first write into a directory removes
// the temporary files of writers that died (filetmp.go).
func (s *FileStore) WriteFile(ctx context.Context, path string, r io.Reader, size int64, mode uint32) (Attr, error) {
	p, err := clean("write", path)
	if err != nil {
		return Attr{}, err
	}
	if p == "" {
		return Attr{}, permanent("write", p, ErrIsDir, "")
	}
	if mode == 0 {
		mode = 0o644
	}
	if fi, err := s.root.Lstat(p); err == nil {
		if fi.IsDir() {
			return Attr{}, permanent("write", p, ErrIsDir, "")
		}
		mode = uint32(fi.Mode().Perm())
	}
	dir, _ := split(p)
	s.sweepTmp(dir)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(mode&0o777))
	if err != nil {
		return Attr{}, ferr("write", p, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			s.root.Remove(tmp)
		}
	}()
	if err := lockTmp(f, true); err != nil {
		return Attr{}, ferr("write", p, err)
	}
	n, err := io.Copy(f, &ctxReader{ctx: ctx, r: io.LimitReader(r, size)})
	if err != nil {
		return Attr{}, ferr("write", p, err)
	}
	if n != size {
		return Attr{}, &Error{Op: "write", Path: p, Err: fmt.Errorf("the reader gave %d of %d bytes: %w", n, size, io.ErrUnexpectedEOF)}
	}
	if err := f.Sync(); err != nil {
		return Attr{}, ferr("write", p, err)
	}
	if err := f.Close(); err != nil {
		return Attr{}, ferr("write", p, err)
	}
	if err := s.root.Chmod(tmp, fs.FileMode(mode&0o777)); err != nil {
		return Attr{}, ferr("write", p, err)
	}
	if err := s.root.Rename(tmp, p); err != nil {
		return Attr{}, ferr("write", p, err)
	}
	ok = true
	return s.Stat(ctx, p)
}

// ctxReader ends a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// openRegular opens an existing regular file for writing.
func (s *FileStore) openRegular(op, p string) (*os.File, error) {
	fi, err := s.root.Lstat(rel(p))
	if err != nil {
		return nil, ferr(op, p, err)
	}
	if fi.IsDir() {
		return nil, permanent(op, p, ErrIsDir, "")
	}
	f, err := s.root.OpenFile(rel(p), os.O_WRONLY, 0)
	if err != nil {
		return nil, ferr(op, p, err)
	}
	return f, nil
}

// WriteAt writes into an existing file.
func (s *FileStore) WriteAt(ctx context.Context, path string, b []byte, off int64) error {
	p, err := clean("write", path)
	if err != nil {
		return err
	}
	if off < 0 {
		return permanent("write", p, ErrInvalidPath, "negative offset %d", off)
	}
	f, err := s.openRegular("write", p)
	if err != nil {
		return err
	}
	defer f.Close()
	before, _ := f.Stat()
	if _, err := f.WriteAt(b, off); err != nil {
		return ferr("write", p, err)
	}
	return ferr("write", p, s.changed(f, p, before))
}

// changed closes f after an in-place change and makes sure the change
// moved the token: a file system's timestamps come from a coarse clock
// (a few ms), so a change soon after another may leave mtime, ctime and
// size as they were; then mtime is moved on by a microsecond. (Changes
// made at home by others have that limit, as they have on NFS.)
func (s *FileStore) changed(f *os.File, p string, before fs.FileInfo) error {
	after, err := f.Stat()
	if err == nil && before != nil && fileAttr("", after).Token == fileAttr("", before).Token {
		t := after.ModTime().Add(time.Microsecond)
		err = s.root.Chtimes(p, time.Time{}, t)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Truncate sets a file's size.
func (s *FileStore) Truncate(ctx context.Context, path string, size int64) error {
	p, err := clean("truncate", path)
	if err != nil {
		return err
	}
	if size < 0 {
		return permanent("truncate", p, ErrInvalidPath, "negative size %d", size)
	}
	f, err := s.openRegular("truncate", p)
	if err != nil {
		return err
	}
	defer f.Close()
	before, _ := f.Stat()
	if err := f.Truncate(size); err != nil {
		return ferr("truncate", p, err)
	}
	return ferr("truncate", p, s.changed(f, p, before))
}

// Create makes an empty file.
func (s *FileStore) Create(ctx context.Context, path string, mode uint32) error {
	p, err := clean("create", path)
	if err != nil {
		return err
	}
	if p == "" {
		return permanent("create", p, ErrExist, "")
	}
	if mode == 0 {
		mode = 0o644
	}
	f, err := s.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(mode&0o777))
	if err != nil {
		return ferr("create", p, err)
	}
	return ferr("create", p, f.Close())
}

// Mkdir makes a directory.
func (s *FileStore) Mkdir(ctx context.Context, path string, mode uint32) error {
	p, err := clean("mkdir", path)
	if err != nil {
		return err
	}
	if p == "" {
		return permanent("mkdir", p, ErrExist, "")
	}
	if mode == 0 {
		mode = 0o755
	}
	return ferr("mkdir", p, s.root.Mkdir(p, fs.FileMode(mode&0o777)))
}

// Remove removes a file or symlink.
func (s *FileStore) Remove(ctx context.Context, path string) error {
	p, err := clean("remove", path)
	if err != nil {
		return err
	}
	fi, err := s.root.Lstat(rel(p))
	if err != nil {
		return ferr("remove", p, err)
	}
	if fi.IsDir() {
		return permanent("remove", p, ErrIsDir, "")
	}
	return ferr("remove", p, s.root.Remove(p))
}

// Rmdir removes an empty directory.
func (s *FileStore) Rmdir(ctx context.Context, path string) error {
	p, err := clean("rmdir", path)
	if err != nil {
		return err
	}
	if p == "" {
		return permanent("rmdir", p, ErrInvalidPath, "the home's root")
	}
	fi, err := s.root.Lstat(p)
	if err != nil {
		return ferr("rmdir", p, err)
	}
	if !fi.IsDir() {
		return permanent("rmdir", p, ErrNotDir, "")
	}
	err = s.root.Remove(p)
	if errors.Is(err, syscall.EEXIST) {
		err = permanent("rmdir", p, ErrNotEmpty, "")
	}
	return ferr("rmdir", p, err)
}

// Rename renames (rename(2) semantics).
func (s *FileStore) Rename(ctx context.Context, from, to string) error {
	f, err := clean("rename", from)
	if err != nil {
		return err
	}
	t, err := clean("rename", to)
	if err != nil {
		return err
	}
	if f == "" || t == "" {
		return permanent("rename", from, ErrInvalidPath, "the home's root")
	}
	err = s.root.Rename(f, t)
	if errors.Is(err, syscall.EEXIST) {
		err = permanent("rename", t, ErrNotEmpty, "")
	}
	return ferr("rename", f, err)
}

// Symlink makes a symlink at path pointing to target (stored as given).
func (s *FileStore) Symlink(ctx context.Context, target, path string) error {
	p, err := clean("symlink", path)
	if err != nil {
		return err
	}
	if p == "" {
		return permanent("symlink", p, ErrExist, "")
	}
	return ferr("symlink", p, s.root.Symlink(target, p))
}

// Readlink returns a symlink's target.
func (s *FileStore) Readlink(ctx context.Context, path string) (string, error) {
	p, err := clean("readlink", path)
	if err != nil {
		return "", err
	}
	t, err := s.root.Readlink(rel(p))
	return t, ferr("readlink", p, err)
}

// Chmod sets permission bits.
func (s *FileStore) Chmod(ctx context.Context, path string, mode uint32) error {
	p, err := clean("chmod", path)
	if err != nil {
		return err
	}
	return ferr("chmod", p, s.root.Chmod(rel(p), fs.FileMode(mode&0o777)))
}

// Chtimes sets times; a zero time is left as it is.
func (s *FileStore) Chtimes(ctx context.Context, path string, atime, mtime time.Time) error {
	p, err := clean("chtimes", path)
	if err != nil {
		return err
	}
	return ferr("chtimes", p, s.root.Chtimes(rel(p), atime, mtime))
}

// Close closes the directory.
func (s *FileStore) Close() error { return s.root.Close() }
