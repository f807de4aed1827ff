package vfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"tessera/internal/meta"
)

// MaxPath bounds a path Resolve walks (PATH_MAX).
const MaxPath = 4096

// maxLinks bounds the symlinks one Resolve follows (Linux's 40).
const maxLinks = 40

// Resolve walks path p from directory base (meta.RootIno for the file
// system's root) with c's permissions (search permission on every
// directory passed) and returns what p names. Empty components and "."
// are skipped; ".." goes to the parent of the directory walked into (not
// above base). A symlink in the middle of p is followed (at most 40 in a
// walk, else ELOOP; an absolute target starts again at base); the last
// component is not followed. Fileset directories are filled (listed at
// home) before they are looked into.
func (v *FS) Resolve(ctx context.Context, c Cred, base meta.Ino, p string) (meta.Inode, error) {
	if len(p) > MaxPath {
		return meta.Inode{}, fmt.Errorf("resolve: a path of %d bytes (at most %d): %w", len(p), MaxPath, syscall.ENAMETOOLONG)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return meta.Inode{}, fmt.Errorf("resolve: a path holds a NUL: %w", syscall.EINVAL)
	}
	cur, err := v.GetAttr(ctx, base)
	if err != nil {
		return meta.Inode{}, err
	}
	stack := []meta.Inode{cur} // the directories walked into, base first
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			cur = stack[len(stack)-1]
			continue
		}
		if !cur.IsDir() {
			return meta.Inode{}, errorf("resolve", cur.Ino, syscall.ENOTDIR)
		}
		if _, err := v.Fill(ctx, cur.Ino); err != nil {
			return meta.Inode{}, err
		}
		next, err := v.Lookup(ctx, c, cur.Ino, name)
		if err != nil {
			return meta.Inode{}, err
		}
		if isSymlink(&next.Attr) && hasMore(rest) {
			if links++; links > maxLinks {
				return meta.Inode{}, fmt.Errorf("resolve: more than %d symlinks: %w", maxLinks, syscall.ELOOP)
			}
			if len(next.Target)+len(p) > MaxPath*2 {
				return meta.Inode{}, fmt.Errorf("resolve: a path grown past %d bytes by symlinks: %w", MaxPath*2, syscall.ENAMETOOLONG)
			}
			if strings.HasPrefix(next.Target, "/") {
				stack = stack[:1]
				cur = stack[0]
			}
			rest = append(strings.Split(next.Target, "/"), rest...)
			continue
		}
		cur = next
		if cur.IsDir() {
			stack = append(stack, cur)
		} else {
			// A non-directory ends the walk unless only separators and
			// "." follow (then ENOTDIR, as "file/." is).
			if hasMore(rest) {
				return meta.Inode{}, errorf("resolve", cur.Ino, syscall.ENOTDIR)
			}
		}
	}
	return cur, nil
}

// hasMore reports whether path components rest name anything beyond
// separators.
func hasMore(rest []string) bool {
	for _, r := range rest {
		if r != "" {
			return true
		}
	}
	return false
}

// TmpPrefix starts the temporary names WriteFileAtomic writes under.
const TmpPrefix = ".tessera-tmp."

// WriteFileAtomic writes the size bytes r gives as file name of directory
// parent: under a temporary name in parent (TmpPrefix and random hex),
// committed and made durable, then renamed over name, so that a reader
// sees the old file or the whole new one. A file replaced keeps its mode;
// a new one gets mode (0644 if 0). Write and search permission on parent
// are needed. It returns the new file's inode.
func (v *FS) WriteFileAtomic(ctx context.Context, c Cred, parent meta.Ino, name string, r io.Reader, size int64, mode uint32) (meta.Inode, error) {
	if err := checkName("write", name); err != nil {
		return meta.Inode{}, err
	}
	if size < 0 {
		return meta.Inode{}, fmt.Errorf("write %q: a negative size %d: %w", name, size, syscall.EINVAL)
	}
	if mode == 0 {
		mode = 0o644
	}
	if old, err := v.Lookup(ctx, c, parent, name); err == nil {
		if old.IsDir() {
			return meta.Inode{}, errorf("write", old.Ino, syscall.EISDIR)
		}
		mode = old.Mode & 0o7777
	} else if !errors.Is(err, syscall.ENOENT) {
		return meta.Inode{}, err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := TmpPrefix + hex.EncodeToString(rnd[:])
	o, err := v.CreateOpen(ctx, c, meta.CreateReq{Parent: parent, Name: tmp, Mode: mode & 0o7777}, syscall.O_WRONLY|syscall.O_EXCL)
	if err != nil {
		return meta.Inode{}, err
	}
	done := false
	defer func() {
		if !done {
			if err := v.Unlink(context.WithoutCancel(ctx), c, parent, tmp); err != nil {
				v.log.Warn("write: removing the temporary file failed", "inode", o.Inode.Ino, "err", err)
			}
		}
	}()
	if err := v.writeAll(ctx, o, r, size); err != nil {
		v.Release(context.WithoutCancel(ctx), o.Fh)
		return meta.Inode{}, err
	}
	if err := v.Release(ctx, o.Fh); err != nil {
		return meta.Inode{}, err
	}
	if err := v.Rename(ctx, c, parent, tmp, parent, name, 0); err != nil {
		return meta.Inode{}, err
	}
	done = true
	return v.Lookup(ctx, c, parent, name)
}

// writeChunk is how much WriteFileAtomic reads and writes at a time.
const writeChunk = 1 << 20

// writeAll writes size bytes of r through o from offset 0 and fsyncs.
func (v *FS) writeAll(ctx context.Context, o Opened, r io.Reader, size int64) error {
	buf := make([]byte, min(size, writeChunk))
	var off int64
	for off < size {
		n, rerr := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if n > 0 {
			if _, err := o.File.Write(ctx, off, buf[:n]); err != nil {
				return err
			}
			off += int64(n)
		}
		if rerr != nil && off < size {
			return fmt.Errorf("write inode %d: the reader gave %d of %d bytes: %w", o.Inode.Ino, off, size, rerr)
		}
	}
	return o.File.Fsync(ctx)
}
