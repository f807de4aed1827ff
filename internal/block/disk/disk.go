package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"tessera/internal/block"
)

var (
	_ block.Store        = (*Store)(nil)
	_ block.Lister       = (*Store)(nil)
	_ block.Checker      = (*Store)(nil)
	_ block.BatchRemover = (*Store)(nil)
)

// verifyBufSize is the read size used when a whole block is hashed as it is
// read from its file (OpenBlock with verify).
const verifyBufSize = 256 << 10

// hashSlack is spare capacity after data handed to the BLAKE3 hasher: with
// less than 16 KiB of capacity past a small subtree the hasher allocates a
// copy of it.
const hashSlack = 16 << 10

// Store is a block store over a local directory. It is safe for concurrent
// use. It must not be used after Close.
//
// Lock order: a first-level fan-out lock (lockDir) before a hash stripe
// (lockFor) before usage.mu; nothing else nests (recent is taken alone).
type Store struct {
	dir    string // as given to Open
	blocks string // dir/blocks
	tmp    string // dir/tmp
	lock   *os.File

	// stripes serialise Put's install-or-refresh step with Remove of the
	// same hash (see the package doc).
	stripes [256]sync.Mutex

	// fan is the state of the fan-out directories (fanout.go).
	fan fanOut

	usage struct {
		sync.Mutex
		blocks, bytes int64
		// disk is what the store takes on its file system: block
		// files, fan-out directories and quarantined copies
		// (st_blocks, as du counts).
		disk int64
	}

	// recent is the window of the blocks written last, whose pages stay
	// in the page cache (cache.go).
	recent struct {
		sync.Mutex
		written
	}

	// jn is the journal of small Puts (journal.go).
	jn *journal

	// verifyBufs is a free list of read buffers for verifyFile; unlike a
	// sync.Pool it survives garbage collections, which 4 MiB reads make
	// frequent.
	verifyBufs chan []byte
}

// Dir returns the directory the store was opened on.
func (s *Store) Dir() string { return s.dir }

// Path returns the name of the file that holds (or would hold) block h.
// Readers of the file must verify its content against h.
func (s *Store) Path(h block.Hash) string {
	x := h.String()
	return filepath.Join(s.blocks, x[0:2], x[2:4], x)
}

// lockFor returns the lock stripe of h. It is picked by the last byte of the
// hash, which is independent of the fan-out directory.
func (s *Store) lockFor(h block.Hash) *sync.Mutex { return &s.stripes[h[block.HashSize-1]] }

// Put stores data under h. See PutCreated.
func (s *Store) Put(ctx context.Context, h block.Hash, data []byte) error {
	_, err := s.PutCreated(ctx, h, data)
	return err
}

// PutCreated stores data under h and reports whether the block is new. It
// checks the hash first (block.ErrHashMismatch), and returns once the block
// is durable. If the block is already present, its mtime is set to now and
// false is returned. Out of space is reported as an error wrapping
// block.ErrNoSpace, with no temporary file left behind.
func (s *Store) PutCreated(ctx context.Context, h block.Hash, data []byte) (created bool, err error) {
	if got := block.Sum(data); got != h {
		return false, fmt.Errorf("put block %s: data hashes to %s: %w", h, got, block.ErrHashMismatch)
	}
	return s.putChecked(ctx, h, data)
}

// Trusted returns a block.Store over s whose Put does not hash the data
// again, for a caller in the same process that computed h from these very
// bytes (the all-in-one `tessera up`). Everything else is s's.
func (s *Store) Trusted() block.Store { return trusted{s} }

type trusted struct{ *Store }

func (t trusted) Put(ctx context.Context, h block.Hash, data []byte) error {
	_, err := t.putChecked(ctx, h, data)
	return err
}

// putChecked is PutCreated after the hash check.
func (s *Store) putChecked(ctx context.Context, h block.Hash, data []byte) (created bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("put block %s: %w", h, err)
	}
	p := s.Path(h)
	size := int64(len(data))

	mu := s.lockFor(h)
	mu.Lock()
	done, err := s.refreshLocked(p, size)
	mu.Unlock()
	if err != nil || done {
		if err != nil {
			err = fmt.Errorf("put block %s: %w", h, err)
		}
		return false, err
	}

	// A small block's file is not fsync'd: its record in the journal is
	// (journal.go).
	journaled := s.jn != nil && len(data) <= journalMax
	tmp, alloc, err := s.writeTmp(data, !journaled)
	if err != nil {
		return false, fmt.Errorf("put block %s: %w", h, err)
	}
	// After a successful install tmp is only a second link (or gone after
	// a rename); either way it must not stay.
	defer os.Remove(tmp)
	// The leaf cannot be pruned from ensureDir until the block is linked
	// into it (fanout.go).
	dmu := s.lockDir(h)
	dmu.RLock()
	if err = s.ensureDir(h, !journaled); err == nil {
		mu.Lock()
		created, err = s.installLocked(h, p, tmp, size, alloc, journaled)
		if err == nil && created && journaled {
			// Under the stripe until durable: a Put of the same
			// block meanwhile must not answer before this one.
			err = s.journalLocked(h, p, data)
			created = err == nil
		}
		mu.Unlock()
	}
	dmu.RUnlock()
	if err != nil {
		return false, fmt.Errorf("put block %s: %w", h, err)
	}
	if created {
		s.noteWritten(p, size)
	}
	return created, nil
}

// refreshLocked handles a Put of a block that is already stored: if the
// file at p exists with the right size, it sets its mtime to now and reports
// done. A missing file, or one of the wrong size (a damaged copy, which the
// caller replaces), is not done.
func (s *Store) refreshLocked(p string, size int64) (done bool, err error) {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, classify(err)
	}
	if fi.Size() != size {
		return false, nil
	}
	now := time.Now()
	if err := os.Chtimes(p, now, now); err != nil {
		return false, classify(err)
	}
	return true, nil
}

// installLocked gives the temporary file tmp, which takes alloc bytes on
// disk, its final name p. It links rather than renames so that a
// concurrent Put of the same block is noticed (and counted once). tmp is
// durable unless journaled; a journaled block is new and linked, not yet
// durable, when created comes back true: the caller records it in the
// journal (journalLocked).
func (s *Store) installLocked(h block.Hash, p, tmp string, size, alloc int64, journaled bool) (created bool, err error) {
	err = os.Link(tmp, p)
	if errors.Is(err, fs.ErrExist) {
		fi, serr := os.Stat(p)
		if serr != nil {
			return false, classify(serr)
		}
		if fi.Size() == size {
			// Installed by a concurrent Put since refreshLocked: that
			// Put made it durable and set its mtime.
			return false, nil
		}
		// A damaged copy: replace it, durably.
		if journaled {
			if err := syncFiles([]string{tmp}, nil); err != nil {
				return false, classify(err)
			}
		}
		if err := os.Rename(tmp, p); err != nil {
			return false, classify(err)
		}
		if err := stampLocked(p); err != nil {
			return false, classify(err)
		}
		if _, err := syncDir(filepath.Dir(p)); err != nil {
			return false, classify(err)
		}
		// Usage counted the block at its true size (unless the damage
		// predates Open's scan: Usage is approximate under damage done
		// behind the store's back).
		return false, nil
	}
	if err != nil {
		return false, classify(err)
	}
	i := leafIndex(h)
	s.fan.leaves[i].n.Add(1)
	s.addUsage(1, size, alloc)
	if err := stampLocked(p); err != nil {
		return true, classify(err)
	}
	if journaled {
		s.raiseLeaf(i, allocOf(filepath.Dir(p)))
		return true, nil
	}
	dirAlloc, err := syncDir(filepath.Dir(p))
	if err != nil {
		return true, classify(err)
	}
	s.raiseLeaf(i, dirAlloc)
	return true, nil
}

// stampLocked sets the mtime of a block file just installed to now. The
// time its data was written is the kernel's coarse clock, up to a tick
// behind now: a removal whose cutoff is a moment before this Put (a block
// released, then written again) must see it as written after the cutoff.
func stampLocked(p string) error {
	now := time.Now()
	return os.Chtimes(p, now, now)
}

// journalLocked records block h, just linked at p, in the journal and
// returns once it is durable. When the journal cannot take it, the file and
// its leaf are fsync'd instead, and the fan-out directories made durable
// (ensureDir: a journaled Put may have made them without an fsync); when
// that fails too the file is removed, so that no later Put finds and
// acknowledges a block that is not durable. The caller holds lockDir(h)
// for reading.
func (s *Store) journalLocked(h block.Hash, p string, data []byte) error {
	jerr := s.jn.record(h, data, p)
	if jerr == nil {
		return nil
	}
	err := syncFiles([]string{p}, map[string]struct{}{filepath.Dir(p): {}})
	if err == nil {
		err = s.ensureDir(h, true)
	}
	if err == nil {
		return nil
	}
	if fi, serr := os.Lstat(p); serr == nil && os.Remove(p) == nil {
		s.dropped(h, fi)
	}
	return classify(errors.Join(jerr, err))
}

// writeTmp writes data to a new file in tmp/, fsyncs it if asked to, and
// returns the file's name and what it takes on disk. On failure the file
// is removed.
func (s *Store) writeTmp(data []byte, durable bool) (name string, alloc int64, err error) {
	f, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return "", 0, classify(err)
	}
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if err == nil {
		var fi fs.FileInfo
		if fi, err = f.Stat(); err == nil {
			alloc = allocOfInfo(fi)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", 0, classify(err)
	}
	return f.Name(), alloc, nil
}

// Usage returns the number of blocks and their total size, kept up to date
// by Put and Remove since the scan at Open.
func (s *Store) Usage(ctx context.Context) (blocks, bytes int64, err error) {
	s.usage.Lock()
	defer s.usage.Unlock()
	return s.usage.blocks, s.usage.bytes, nil
}

// OnDisk returns what the store takes on its file system, as du counts it
// (allocated blocks): its block files, fan-out directories and quarantined
// copies, kept up to date by Put, Remove and quarantine since the scan at
// Open. Damage done behind the store's back is not seen until the next
// Open.
func (s *Store) OnDisk() int64 {
	s.usage.Lock()
	defer s.usage.Unlock()
	return s.usage.disk
}

func (s *Store) addUsage(blocks, bytes, disk int64) {
	s.usage.Lock()
	s.usage.blocks += blocks
	s.usage.bytes += bytes
	s.usage.disk += disk
	s.usage.Unlock()
}

// open opens the file of h, mapping a missing file to block.ErrNotFound.
func (s *Store) open(h block.Hash) (*os.File, error) {
	f, err := os.Open(s.Path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, block.ErrNotFound
	}
	return f, err
}

// corruptFound moves the corrupt file of block h out of the store, into
// DIR/quarantine, so that the next Put of h (a repair with a good copy)
// writes the block afresh, and returns the error naming the file. A failure
// to move it is added to the error.
func (s *Store) corruptFound(h block.Hash, path string, got block.Hash) error {
	err, emptied := s.quarantineLocked(h, path, corrupt(h, path, got))
	if emptied {
		s.prune(h)
	}
	return err
}

// quarantineLocked is corruptFound under h's stripe; emptied is as for
// removeLocked.
func (s *Store) quarantineLocked(h block.Hash, path string, err error) (_ error, emptied bool) {
	mu := s.lockFor(h)
	mu.Lock()
	defer mu.Unlock()
	fi, serr := os.Stat(path)
	if serr != nil {
		return err, false // already moved by a concurrent reader
	}
	qdir := filepath.Join(s.dir, "quarantine")
	if _, serr := os.Stat(qdir); serr != nil {
		if merr := os.MkdirAll(qdir, 0o755); merr != nil {
			return fmt.Errorf("%w (quarantine: %v)", err, merr), false
		}
		s.addDisk(allocOf(qdir))
	}
	q := filepath.Join(qdir, fmt.Sprintf("%s.%d", h, time.Now().UnixNano()))
	if rerr := os.Rename(path, q); rerr != nil {
		return fmt.Errorf("%w (quarantine: %v)", err, rerr), false
	}
	emptied = s.dropped(h, fi)
	s.addDisk(allocOfInfo(fi)) // still on disk, in quarantine/
	return fmt.Errorf("%w; moved to %s", err, q), emptied
}

// corrupt is the error for a block file whose content does not match its
// name.
func corrupt(h block.Hash, path string, got block.Hash) error {
	return fmt.Errorf("block %s: file %s: %w: content hashes to %s", h, path, block.ErrCorrupt, got)
}

// classify marks out-of-space errors with block.ErrNoSpace.
func classify(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", block.ErrNoSpace, err)
	}
	return err
}

// syncDir fsyncs a directory, making the entries created in it durable, and
// returns what the directory takes on disk (0 if fstat fails).
func syncDir(dir string) (alloc int64, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	err = d.Sync()
	if fi, serr := d.Stat(); err == nil && serr == nil {
		alloc = allocOfInfo(fi)
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("fsync %s: %w", dir, err)
	}
	return alloc, nil
}
