package fsx

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// do performs one operation on the file system and the model, and checks
// the result. It returns a description for the log. The operation done can
// differ from the one asked for when that one cannot run (a closed
// descriptor, no free name, ...); *op is updated.
func (r *runner) do(opp *Op) (string, error) {
	op := *opp
	defer func() { *opp = op }()
	h := r.handles[r.rng.IntN(len(r.handles))]
	switch op {
	case OpWrite, OpRead, OpFtruncate, OpFsync, OpFdatasync, OpPunchHole, OpZeroRange:
		if h.f == nil {
			op = OpReopen // a closed slot is opened first
		}
	case OpAppend, OpTruncate, OpReadPath, OpVerify, OpRename, OpUnlink, OpLink:
		if len(r.existingNames()) == 0 {
			op = OpReopen
		}
	}
	if op == OpLink && len(r.freeNames()) == 0 {
		op = OpUnlink
	}
	if op == OpUnlink && len(r.existingNames()) == 1 {
		op = OpRename
	}

	switch op {
	case OpWrite:
		size := h.ino.size()
		n := r.pickSize()
		off := r.pickOffset(size, n)
		p := r.data(n)
		desc := fmt.Sprintf("write %s off=%d len=%d size %d->%d", h, off, n, size, max(size, off+n))
		if _, err := h.f.WriteAt(p, off); err != nil {
			return desc, err
		}
		h.ino.writeAt(p, off)
		r.stats.BytesWritten += n
		return desc, r.checkFstat(h)

	case OpAppend:
		name := r.pickFrom(r.existingNames())
		ino := r.byName[name]
		room := r.cfg.MaxFileSize - ino.size()
		if room <= 0 {
			desc := fmt.Sprintf("append %s: at the size limit, truncate to 0 instead", name)
			if err := os.Truncate(r.path(name), 0); err != nil {
				return desc, err
			}
			ino.resize(0)
			return desc, r.checkStat(name)
		}
		n := min(r.pickSize(), room)
		p := r.data(n)
		desc := fmt.Sprintf("append %s ino%d len=%d size %d->%d", name, ino.id, n, ino.size(), ino.size()+n)
		f, err := os.OpenFile(r.path(name), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return desc, err
		}
		_, err = f.Write(p)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return desc, err
		}
		ino.writeAt(p, ino.size())
		r.stats.BytesWritten += n
		return desc, r.checkStat(name)

	case OpRead:
		size := h.ino.size()
		n := r.pickSize()
		off := r.pickOffset(size, n)
		if r.rng.IntN(10) == 0 {
			off = size + r.rng.Int64N(4096) // at or past EOF
		}
		desc := fmt.Sprintf("read %s off=%d len=%d size=%d", h, off, n, size)
		return desc, r.checkRead(h.f, h.ino, off, n)

	case OpReadPath:
		name := r.pickFrom(r.existingNames())
		ino := r.byName[name]
		n := r.pickSize()
		off := r.pickOffset(ino.size(), n)
		desc := fmt.Sprintf("readpath %s ino%d off=%d len=%d size=%d", name, ino.id, off, n, ino.size())
		f, err := os.Open(r.path(name))
		if err != nil {
			return desc, err
		}
		defer f.Close()
		return desc, r.checkRead(f, ino, off, n)

	case OpTruncate:
		name := r.pickFrom(r.existingNames())
		ino := r.byName[name]
		l := r.pickLength(ino.size())
		desc := fmt.Sprintf("truncate %s ino%d %d->%d", name, ino.id, ino.size(), l)
		if err := os.Truncate(r.path(name), l); err != nil {
			return desc, err
		}
		ino.resize(l)
		return desc, r.checkStat(name)

	case OpFtruncate:
		l := r.pickLength(h.ino.size())
		desc := fmt.Sprintf("ftruncate %s %d->%d", h, h.ino.size(), l)
		if err := h.f.Truncate(l); err != nil {
			return desc, err
		}
		h.ino.resize(l)
		return desc, r.checkFstat(h)

	case OpPunchHole, OpZeroRange:
		size := h.ino.size()
		n := r.pickSize()
		off := r.pickOffset(size, n)
		mode, name := uint32(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE), "punchhole"
		keep := true
		if op == OpZeroRange {
			mode, name = unix.FALLOC_FL_ZERO_RANGE, "zerorange"
			if keep = r.rng.IntN(2) == 0; keep {
				mode |= unix.FALLOC_FL_KEEP_SIZE
				name += "+keepsize"
			}
		}
		newSize := size
		if !keep {
			newSize = max(size, off+n)
		}
		desc := fmt.Sprintf("%s %s off=%d len=%d size %d->%d", name, h, off, n, size, newSize)
		if err := unix.Fallocate(int(h.f.Fd()), mode, off, n); err != nil {
			return desc, err
		}
		h.ino.resize(newSize)
		if end := min(off+n, newSize); off < end {
			clear(h.ino.data[off:end])
		}
		return desc, r.checkFstat(h)

	case OpFsync:
		desc := fmt.Sprintf("fsync %s", h)
		return desc, h.f.Sync()

	case OpFdatasync:
		desc := fmt.Sprintf("fdatasync %s", h)
		return desc, unix.Fdatasync(int(h.f.Fd()))

	case OpReopen:
		name := r.pickFrom(r.names)
		trunc := r.byName[name] != nil && r.rng.IntN(8) == 0
		old := h.String()
		desc, err := r.openHandle(h, name, trunc)
		desc = fmt.Sprintf("reopen %s -> %s", old, desc)
		if err != nil {
			return desc, err
		}
		return desc, r.checkFstat(h)

	case OpRename:
		from := r.pickFrom(r.existingNames())
		to := r.pickFrom(r.names)
		for to == from {
			to = r.pickFrom(r.names)
		}
		src, dst := r.byName[from], r.byName[to]
		desc := fmt.Sprintf("rename %s(ino%d) -> %s", from, src.id, to)
		if dst != nil {
			desc += fmt.Sprintf("(ino%d, replaced)", dst.id)
		}
		if err := os.Rename(r.path(from), r.path(to)); err != nil {
			return desc, err
		}
		switch {
		case dst == src:
			// Two links of one inode: POSIX says rename does nothing.
			desc += " (same inode: no-op)"
			if err := r.checkStat(from); err != nil {
				return desc, err
			}
		default:
			if dst != nil {
				dst.nlink--
			}
			r.byName[to] = src
			delete(r.byName, from)
			if err := r.checkAbsent(from); err != nil {
				return desc, err
			}
		}
		return desc, r.checkStat(to)

	case OpLink:
		from := r.pickFrom(r.existingNames())
		to := r.pickFrom(r.freeNames())
		ino := r.byName[from]
		desc := fmt.Sprintf("link %s(ino%d) -> %s", from, ino.id, to)
		if err := os.Link(r.path(from), r.path(to)); err != nil {
			return desc, err
		}
		ino.nlink++
		r.byName[to] = ino
		if err := r.checkStat(from); err != nil {
			return desc, err
		}
		return desc, r.checkStat(to)

	case OpUnlink:
		name := r.pickFrom(r.existingNames())
		ino := r.byName[name]
		desc := fmt.Sprintf("unlink %s(ino%d nlink %d)", name, ino.id, ino.nlink)
		if err := os.Remove(r.path(name)); err != nil {
			return desc, err
		}
		ino.nlink--
		delete(r.byName, name)
		return desc, r.checkAbsent(name)

	case OpVerify:
		name := r.pickFrom(r.existingNames())
		desc := fmt.Sprintf("verify %s(ino%d size %d)", name, r.byName[name].id, r.byName[name].size())
		return desc, r.verifyName(name)
	}
	return "", fmt.Errorf("unknown op %v", op)
}

// openHandle points h at name, closing what h held first.
func (r *runner) openHandle(h *handle, name string, trunc bool) (string, error) {
	if h.f != nil {
		if err := h.f.Close(); err != nil {
			h.f = nil
			return "close", fmt.Errorf("close: %w", err)
		}
		h.f = nil
	}
	flags := os.O_RDWR
	ino := r.byName[name]
	what := "open"
	if ino == nil {
		flags |= os.O_CREATE | os.O_EXCL
		what = "create"
	} else if trunc {
		flags |= os.O_TRUNC
		what = "open O_TRUNC"
	}
	f, err := os.OpenFile(r.path(name), flags, 0o644)
	if err != nil {
		return fmt.Sprintf("%s %s", what, name), err
	}
	if ino == nil {
		r.nextIno++
		ino = &inode{id: r.nextIno, nlink: 1}
		r.byName[name] = ino
	} else if trunc {
		ino.resize(0)
	}
	h.f, h.ino, h.name = f, ino, name
	return fmt.Sprintf("%s %s ino%d size=%d", what, name, ino.id, ino.size()), nil
}

func (r *runner) checkRead(f *os.File, ino *inode, off, n int64) error {
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	r.stats.BytesRead += int64(got)
	want := ino.readAt(off, n)
	if firstDiff(want, buf[:got]) >= 0 {
		return fmt.Errorf("read mismatch: %s", describeDiff(want, buf[:got], off))
	}
	return nil
}

func (r *runner) checkFstat(h *handle) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(h.f.Fd()), &st); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	if st.Size != h.ino.size() {
		return fmt.Errorf("fstat %s: size %d, want %d", h, st.Size, h.ino.size())
	}
	if int(st.Nlink) != h.ino.nlink {
		return fmt.Errorf("fstat %s: nlink %d, want %d", h, st.Nlink, h.ino.nlink)
	}
	return nil
}

func (r *runner) checkStat(name string) error {
	ino := r.byName[name]
	var st unix.Stat_t
	if err := unix.Stat(r.path(name), &st); err != nil {
		return fmt.Errorf("stat %s: %w", name, err)
	}
	if st.Size != ino.size() {
		return fmt.Errorf("stat %s: size %d, want %d", name, st.Size, ino.size())
	}
	if int(st.Nlink) != ino.nlink {
		return fmt.Errorf("stat %s: nlink %d, want %d", name, st.Nlink, ino.nlink)
	}
	return nil
}

func (r *runner) checkAbsent(name string) error {
	var st unix.Stat_t
	err := unix.Lstat(r.path(name), &st)
	if err == nil {
		return fmt.Errorf("lstat %s: exists after it was renamed away or unlinked", name)
	}
	if err != syscall.ENOENT {
		return fmt.Errorf("lstat %s: %w, want ENOENT", name, err)
	}
	return nil
}

// verifyName reads a whole file through a fresh descriptor.
func (r *runner) verifyName(name string) error {
	if err := r.checkStat(name); err != nil {
		return err
	}
	f, err := os.Open(r.path(name))
	if err != nil {
		return err
	}
	defer f.Close()
	ino := r.byName[name]
	return r.checkRead(f, ino, 0, ino.size()+1)
}

// verifyAll checks every name and every open descriptor in full.
func (r *runner) verifyAll() error {
	for _, n := range r.existingNames() {
		if err := r.verifyName(n); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	for _, h := range r.handles {
		if h.f == nil {
			continue
		}
		if err := r.checkFstat(h); err != nil {
			return err
		}
		if err := r.checkRead(h.f, h.ino, 0, h.ino.size()+1); err != nil {
			return fmt.Errorf("%s: %w", h, err)
		}
	}
	return nil
}
