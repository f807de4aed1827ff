package main

import (
	"archive/tar"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pattern fills b with bytes that do not compress, and stamps off into its
// first 8 bytes so a read can tell it got the piece it asked for.
func pattern(b []byte, off int64) {
	binary.LittleEndian.PutUint64(b, uint64(off))
}

// newPiece is n bytes drawn from seed: runs given different seeds write
// different blocks (a content-addressed store dedups a repeated file).
func newPiece(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func seqWrite(t target, o options) error {
	c, err := t.newClient()
	if err != nil {
		return err
	}
	_, wsize := c.IOSize()
	base := newPiece(wsize, o.seed)
	start := time.Now()
	f, err := c.Create(o.file, 0o644)
	if err != nil {
		return err
	}
	err = inPieces(o.size, wsize, o.window, func(buf []byte, off int64) error {
		copy(buf, base)
		pattern(buf, off)
		return f.WriteAt(buf, off)
	})
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	report("seqwrite", 1, o.size, time.Since(start).Seconds())
	return nil
}

func seqRead(t target, o options) error {
	c, err := t.newClient()
	if err != nil {
		return err
	}
	rsize, wsize := c.IOSize()
	start := time.Now()
	f, err := c.Open(o.file)
	if err != nil {
		return err
	}
	defer f.Close()
	err = inPieces(o.size, rsize, o.window, func(buf []byte, off int64) error {
		want := len(buf)
		n, err := f.ReadAt(buf, off)
		if err != nil && !(errors.Is(err, io.EOF) && n == want) {
			return fmt.Errorf("read at %d: got %d of %d bytes: %w", off, n, want, err)
		}
		if n < want {
			return fmt.Errorf("read at %d: got %d of %d bytes", off, n, want)
		}
		if off%int64(wsize) == 0 && n >= 8 && int64(binary.LittleEndian.Uint64(buf)) != off {
			return fmt.Errorf("read at %d: the piece is stamped %d: not what seqwrite wrote there", off, binary.LittleEndian.Uint64(buf))
		}
		return nil
	})
	if err != nil {
		return err
	}
	report("seqread", 1, o.size, time.Since(start).Seconds())
	return nil
}

// inPieces calls do for each piece of size bytes in order of offset, with
// window calls at once (each its own buffer): a kernel client keeps several
// READs or WRITEs of a sequential reader or writer in flight (read-ahead,
// write-behind); window 1 is one call after another. The first error stops
// it.
func inPieces(size int64, piece, window int, do func(buf []byte, off int64) error) error {
	var (
		mu    sync.Mutex
		next  int64
		first error
		wg    sync.WaitGroup
	)
	for range max(window, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, piece)
			for {
				mu.Lock()
				off := next
				next += int64(piece)
				stop := first != nil || off >= size
				mu.Unlock()
				if stop {
					return
				}
				if err := do(buf[:min(int64(piece), size-off)], off); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func randRead(t target, o options) error {
	const bs = 4096
	blocks := o.size / bs
	if blocks < 1 {
		return fmt.Errorf("-size %d is smaller than one 4 KiB read", o.size)
	}
	files := make([]file, o.streams)
	for i := range files {
		c, err := t.newClient()
		if err != nil {
			return err
		}
		if files[i], err = c.Open(o.file); err != nil {
			return err
		}
	}
	errs := make([]error, o.streams)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range files {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(o.seed + int64(i)))
			buf := make([]byte, bs)
			for k := i; k < o.count; k += o.streams {
				off := r.Int63n(blocks) * bs
				if n, err := files[i].ReadAt(buf, off); n != bs {
					errs[i] = fmt.Errorf("read at %d: got %d of %d bytes: %v", off, n, bs, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	report(fmt.Sprintf("randread%d", o.streams), o.count, int64(o.count)*bs, secs)
	return nil
}

// meta creates, stats and removes o.n empty files, each worker in its own
// directory PATH/wI on its own connection; each phase is timed alone.
func meta(t target, o options) error {
	cs := make([]client, o.threads)
	for i := range cs {
		var err error
		if cs[i], err = t.newClient(); err != nil {
			return err
		}
	}
	if err := cs[0].Mkdir(o.path, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", o.path, err)
	}
	for i := range cs {
		if err := cs[0].Mkdir(fmt.Sprintf("%s/w%d", o.path, i), 0o755); err != nil {
			return fmt.Errorf("mkdir: %w", err)
		}
	}
	phases := []struct {
		name string
		op   func(c client, p string) error
	}{
		{"create", func(c client, p string) error {
			f, err := c.Create(p, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}},
		{"stat", client.Stat},
		{"remove", client.Remove},
	}
	for _, ph := range phases {
		if o.dropCaches {
			dropCaches()
		}
		errs := make([]error, o.threads)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range cs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				for k := i; k < o.n; k += o.threads {
					if err := ph.op(cs[i], fmt.Sprintf("%s/w%d/f%d", o.path, i, k)); err != nil {
						errs[i] = fmt.Errorf("%s: %w", ph.name, err)
						return
					}
				}
			}(i)
		}
		wg.Wait()
		secs := time.Since(start).Seconds()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		report(ph.name, o.n, 0, secs)
	}
	return nil
}

func dropCaches() {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err != nil {
		fmt.Fprintf(os.Stderr, "nfsbench: cannot drop caches: %v\n", err)
	}
}

// untar writes the tar's entries under PATH: directories, regular files
// (written in wsize pieces, closed: COMMIT over NFS) and symlinks; hard
// links and other kinds are counted as skipped. One worker, as tar is.
func untar(t target, o options) error {
	if o.tar == "" {
		return fmt.Errorf("-tar FILE is required")
	}
	in, err := os.Open(o.tar)
	if err != nil {
		return err
	}
	defer in.Close()
	c, err := t.newClient()
	if err != nil {
		return err
	}
	_, wsize := c.IOSize()
	buf := make([]byte, wsize)
	start := time.Now()
	if err := c.Mkdir(o.path, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", o.path, err)
	}
	tr := tar.NewReader(in)
	made := map[string]bool{"": true}
	var entries, skipped int
	var bytes int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", o.tar, err)
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		if name == "" {
			continue
		}
		p := o.path + "/" + name
		mode := uint32(h.Mode & 0o7777)
		// a tar of a subtree may carry no entries for its parents: make them
		n, err := mkdirParents(c, o.path, path.Dir(name), made)
		entries += n
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if made[name] {
				continue
			}
			made[name] = true
			err = c.Mkdir(p, mode)
		case tar.TypeSymlink:
			err = c.Symlink(h.Linkname, p)
		case tar.TypeReg:
			var n int64
			n, err = writeFile(c, p, mode, tr, buf)
			bytes += n
		default:
			skipped++
			continue
		}
		if err != nil {
			return fmt.Errorf("entry %d (%s): %w", entries, name, err)
		}
		entries++
	}
	report("untar", entries, bytes, time.Since(start).Seconds())
	if skipped > 0 {
		fmt.Fprintf(os.Stderr, "nfsbench: untar skipped %d entries (hard links, devices)\n", skipped)
	}
	return nil
}

// mkdirParents makes dir and its parents under root unless made already;
// it returns how many it made.
func mkdirParents(c client, root, dir string, made map[string]bool) (int, error) {
	if dir == "." || made[dir] {
		return 0, nil
	}
	n, err := mkdirParents(c, root, path.Dir(dir), made)
	if err != nil {
		return n, err
	}
	if err := c.Mkdir(root+"/"+dir, 0o755); err != nil {
		return n, fmt.Errorf("mkdir %s: %w", dir, err)
	}
	made[dir] = true
	return n + 1, nil
}

func writeFile(c client, p string, mode uint32, r io.Reader, buf []byte) (int64, error) {
	f, err := c.Create(p, mode)
	if err != nil {
		return 0, err
	}
	var off int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := f.WriteAt(buf[:n], off); err != nil {
				f.Close()
				return off, err
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			f.Close()
			return off, rerr
		}
	}
	return off, f.Close()
}
