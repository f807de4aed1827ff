package fuse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"tessera/internal/client"
	"tessera/internal/meta"
	"tessera/internal/ratelog"
	"tessera/internal/vfs"
)

// Options tune the mount.
type Options struct {
	EntryTimeout time.Duration // default 1 s
	AttrTimeout  time.Duration // default 1 s
	Debug        bool          // log every FUSE request
	Logger       *slog.Logger
	// Wrap, if set, decorates the file system the kernel's requests go
	// to (metrics.FUSE counts and times them); Mount serves what it
	// returns, which must pass every request on to the FS it was given.
	Wrap func(gofuse.RawFileSystem) gofuse.RawFileSystem
	// Gateway, if set, is asked to list fileset directories and fetch
	// fileset files not cached yet, before they are served
	// (vfs.Options.Gateway).
	Gateway Gateway
	// ReadOnly mounts read-only in the kernel, and the mount refuses an
	// open for writing and a create with EROFS itself too: for an
	// identity that may not change the namespace (client-ro), whose
	// writes the meta service would refuse only at the commit, after
	// write(2) said yes (vfs.Options.ReadOnly).
	ReadOnly bool
}

// FS implements gofuse.RawFileSystem over a client, through vfs: the
// rules every front end shares (permissions, the open-file table, the
// fileset rules) live there.
type FS struct {
	gofuse.RawFileSystem // ENOSYS for what we do not implement
	c                    *client.Client
	v                    *vfs.FS // the rules every front end shares
	opts                 Options
	log                  *slog.Logger
	srv                  atomic.Pointer[gofuse.Server] // set by Mount, for notifications
	// noSpace keeps a full disk from logging every refused write.
	noSpace ratelog.Limiter
}

// Gateway is what a mount asks when it meets a fileset inode that is not
// cached yet (vfs.Gateway).
type Gateway = vfs.Gateway

// New returns the file system; Mount serves it.
func New(c *client.Client, opts Options) *FS {
	if opts.EntryTimeout == 0 {
		opts.EntryTimeout = time.Second
	}
	if opts.AttrTimeout == 0 {
		opts.AttrTimeout = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	v := vfs.New(c, vfs.Options{Logger: opts.Logger, Gateway: opts.Gateway, ReadOnly: opts.ReadOnly})
	return &FS{RawFileSystem: gofuse.NewDefaultRawFileSystem(), c: c, v: v, opts: opts, log: opts.Logger}
}

// Mount mounts fs at dir and starts serving it; Server.Unmount ends it.
func Mount(fs *FS, dir string) (*gofuse.Server, error) {
	mo := &gofuse.MountOptions{
		AllowOther:    true,
		Name:          "tessera",
		FsName:        "tessera",
		MaxWrite:      1 << 20,
		MaxReadAhead:  1 << 20,
		MaxBackground: 64,
		Options:       []string{"default_permissions"},
		DirectMount:   true,
		// Reads answer with bytes, never a file descriptor, so splicing
		// has nothing to move; left on, go-fuse tries it for every read,
		// finds 1 MiB plus the header over the pipe's size limit and logs
		// that on each read.
		DisableSplice: true,
		// Coherent and uncached policies open files with direct I/O;
		// without this capability the kernel refuses MAP_SHARED on them
		// (ENODEV). With it (Linux 6.6 and later) a shared mapping goes
		// through the page cache, which the kernel writes back and drops
		// around each direct write (docs/design/2026-11-24-posix-mmap.md).
		//
		// HANDLE_KILLPRIV_V2: this layer clears set-id bits where a write,
		// truncate or chown must (FUSE_WRITE_KILL_SUIDGID,
		// FATTR_KILL_SUIDGID, FUSE_OPEN_KILL_SUIDGID), so the kernel need
		// not ask: without it every chown costs a GETATTR first and every
		// write(2) a GETXATTR of security.capability (the capability lets
		// the kernel mark an inode S_NOSEC after its first write, as for
		// a local file system). Untar of Go's src: 35,135 GETXATTR and
		// 23,218 GETATTR requests without it (issue 28).
		ExtraCapabilities: gofuse.CAP_DIRECT_IO_ALLOW_MMAP | gofuse.CAP_HANDLE_KILLPRIV_V2,
		Debug:             fs.opts.Debug,
	}
	if fs.opts.ReadOnly {
		// A flag of mount(2), not an option string (the kernel refuses
		// "ro" among FUSE's options); go-fuse's default flags plus it.
		mo.DirectMountFlags = syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_RDONLY
	}
	var raw gofuse.RawFileSystem = fs
	if fs.opts.Wrap != nil {
		raw = fs.opts.Wrap(fs)
	}
	srv, err := gofuse.NewServer(raw, dir, mo)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	fs.srv.Store(srv)
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	if err := setReadAhead(dir, readAheadKB); err != nil {
		fs.log.Debug("kernel read-ahead left at its default", "mount", dir, "err", err)
	}
	return srv, nil
}

// readAheadKB is the kernel's read-ahead window on the mount: as large as a
// FUSE read (1 MiB). The kernel starts FUSE mounts at 128 KiB, which keeps
// one small read in flight; at 1 MiB a cold sequential read of 1 GiB went
// from 909 MB/s to 1.4 GB/s here (docs/design/2026-11-22-core-data-path.md).
const readAheadKB = 1024

// setReadAhead sets the read-ahead of the mount's backing device info
// (/sys/class/bdi/MAJOR:MINOR/read_ahead_kb); it needs root.
func setReadAhead(dir string, kb int) error {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return err
	}
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	return os.WriteFile(p, []byte(strconv.Itoa(kb)), 0o644)
}

func (fs *FS) String() string { return "tessera" }

// invalidateAttr makes the kernel forget ino's cached attributes. It only
// marks them stale, taking no inode lock, so a request handler may call it.
func (fs *FS) invalidateAttr(ino meta.Ino) {
	if srv := fs.srv.Load(); srv != nil {
		srv.InodeNotify(uint64(ino), -1, 0)
	}
}

// Invalidate makes the kernel forget ino's cached attributes and pages, as
// a callback from the meta service asks (another client changed the file);
// it is what a mount subscribes to vfs.Invalidations.
// Dropping pages waits for page locks that reads in flight hold, so it runs
// on its own goroutine and the caller never waits for it.
func (fs *FS) Invalidate(ino meta.Ino) {
	srv := fs.srv.Load()
	if srv == nil {
		return
	}
	go func() {
		if st := srv.InodeNotify(uint64(ino), 0, -1); st != gofuse.OK && st != gofuse.ENOENT {
			fs.log.Debug("kernel cache invalidation", "inode", ino, "status", st)
		}
	}()
}

// status maps an error to a FUSE status: errno values pass through, anything
// else is EIO with a log line.
func (fs *FS) status(op string, err error) gofuse.Status {
	if err == nil {
		return gofuse.OK
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EIO:
			fs.log.Error(op, "err", err)
		case syscall.ENOSPC:
			fs.noSpace.Log(fs.log, slog.LevelError, op, "err", err)
		}
		return gofuse.Status(errno)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		fs.log.Error(op, "err", err)
		return gofuse.EIO
	}
	fs.log.Error(op, "err", err)
	return gofuse.EIO
}

// ctxOf is the context of a request: every request may wait, for the meta
// service during an outage (metawait) if for nothing else, so every one is
// killable.
func ctxOf(cancel <-chan struct{}, h *gofuse.InHeader) context.Context { return killable(cancel, h) }

// killable is the context of a request that may wait without a bound of
// its own (a write waiting for dirty budget, a commit for its uploads, any
// call for an unavailable meta service): go-fuse closes cancel when the
// kernel interrupts the request (its caller got a signal), and if the
// caller is then dying, those waits end with EINTR (client.WithInterrupt)
// so that a killed process is not held in state D. A caller that handles
// its signal is not disturbed.
func killable(cancel <-chan struct{}, h *gofuse.InHeader) context.Context {
	pid := h.Caller.Pid
	if pid == 0 {
		return context.Background()
	}
	return client.WithInterrupt(context.Background(), cancel, func() bool { return killPending(pid) })
}

// fillAttr converts meta attributes into the kernel's.
func fillAttr(in *meta.Inode, out *gofuse.Attr) {
	out.Ino = uint64(in.Ino)
	out.Size = in.Size
	out.Blocks = (in.Size + 511) / 512
	out.Atime, out.Atimensec = splitNs(in.Atime)
	out.Mtime, out.Mtimensec = splitNs(in.Mtime)
	out.Ctime, out.Ctimensec = splitNs(in.Ctime)
	out.Mode = in.Mode
	out.Nlink = in.Nlink
	out.Uid = in.Uid
	out.Gid = in.Gid
	out.Rdev = in.Rdev
	out.Blksize = 1 << 20
}

// splitNs splits unix nanoseconds into the kernel's seconds (a signed
// value carried in a uint64) and nanoseconds (0 to 1e9-1), also before 1970.
func splitNs(ns int64) (uint64, uint32) {
	sec, nsec := ns/1e9, ns%1e9
	if nsec < 0 {
		sec--
		nsec += 1e9
	}
	return uint64(sec), uint32(nsec)
}

// joinNs is the inverse of splitNs.
func joinNs(sec uint64, nsec uint32) int64 {
	return int64(sec)*1e9 + int64(nsec)
}

// fillEntry converts an entry vfs returned (its attributes through
// client.Overlay already) into the kernel's.
func (fs *FS) fillEntry(in *meta.Inode, out *gofuse.EntryOut) {
	out.NodeId = uint64(in.Ino)
	out.Generation = in.Gen
	out.SetEntryTimeout(fs.opts.EntryTimeout)
	out.SetAttrTimeout(fs.attrTTL(in))
	fillAttr(in, &out.Attr)
}

// attrTTL is how long the kernel may keep in's attributes: what the
// inode's consistency policy allows (client.CacheTTL) for regular files,
// Options.AttrTimeout for the rest, whose attributes no policy governs.
func (fs *FS) attrTTL(in *meta.Inode) time.Duration {
	if !in.IsRegular() {
		return fs.opts.AttrTimeout
	}
	return fs.c.CacheTTL(in)
}

// StatFs reports the room the block servers have for new data, or in a
// directory quota's tree the quota's (vfs.FS.StatFSIn).
func (fs *FS) StatFs(cancel <-chan struct{}, header *gofuse.InHeader, out *gofuse.StatfsOut) gofuse.Status {
	st, err := fs.v.StatFSIn(ctxOf(cancel, header), meta.Ino(header.NodeId))
	if err != nil {
		return fs.status("statfs", err)
	}
	out.Bsize = st.Bsize
	out.Frsize = st.Bsize
	out.Blocks = st.Blocks
	out.Bfree = st.Bfree
	out.Bavail = st.Bavail
	out.Files = st.Files
	out.Ffree = st.Ffree
	out.NameLen = st.NameLen
	return gofuse.OK
}

// cred is the caller of a request as vfs takes it: checked already, by
// the kernel (default_permissions).
func cred(h *gofuse.InHeader) vfs.Cred {
	return vfs.Cred{Uid: h.Uid, Gid: h.Gid, Checked: true}
}
