package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"tessera/internal/block"
)

// The journal of small Puts (package doc, Durability): a small block is
// written to its file and linked into place without an fsync, and its
// content is appended to DIR/journal, which is fdatasync'd once for every
// Put waiting on it (group commit). After a crash Open replays the journal:
// every record whose content hashes to its name is made durable under its
// name again.
//
// The journal is two halves. Records go to one; when it is full (by bytes
// or journalRecs records) they go to the other, and the full half is
// checkpointed in the background: its block files are fsync'd with their
// directories, then its header gets a new generation, which empties it.
// Records wait for the switch only when the other half's checkpoint has
// not finished yet.
//
// Layout of each half of DIR/journal: a header of journalHeaderSize bytes
// (magic, the generation, a CRC of both), then records: recHeaderSize bytes
// (magic, the generation, the length, the block's hash) and the block's
// bytes. A record is valid when its magic and generation are its half's and
// its bytes hash to its hash (the name of a block is the BLAKE3 of its
// content, so a torn record never passes); replay stops at the first that
// is not. The file grows in journalFill steps of zeros, written ahead of
// the records, so that the fdatasync of a record in the space written
// before flushes only data, not the file's size.

const (
	// journalMax is the largest block the journal takes; larger ones are
	// written durably to their files (one block's fsync is then a small
	// part of its cost).
	journalMax = 64 << 10
	// journalHalf is the size of each half of the journal file;
	// journalRecs bounds the records of a half (each costs an fsync of
	// its file at the checkpoint).
	journalHalf = 16 << 20
	journalRecs = 4096
	// ckptDelay is how long a full half waits before its checkpoint,
	// unless the other half fills first: by then the kernel has written
	// its files back (dirty pages expire after 30 s by default, metadata
	// is committed every 5 s on ext4), and the fsyncs find little or
	// nothing to do. Checkpointed at once, each fsync of a just-written
	// file cost the disk a flush, as much as the Put saved.
	ckptDelay = 40 * time.Second
	// journalFill is the step of zeros the file grows by.
	journalFill = 256 << 10

	journalHeaderSize = 4096
	recHeaderSize     = 48
	journalMagic      = 0x4a535354 // "TSSJ"
	recMagic          = 0x52535354 // "TSSR"
)

// half is one half of the journal: its generation and what its records
// cover (the block files, and their leaves and parents: a leaf made for a
// journaled Put was not synced into them, ensureDir).
type half struct {
	gen   uint32
	paths []string
	dirs  map[string]struct{}
}

// journal is DIR/journal while the store is open.
type journal struct {
	f *os.File

	mu   sync.Mutex
	cond *sync.Cond // broadcast when a sync or a checkpoint ends
	// gen is the last generation given to a half.
	gen    uint32
	halves [2]half
	cur    int   // the half records go to
	off    int64 // where the next record goes
	// ckpt is set while the other half's checkpoint runs; hurry, closed
	// by a record that needs the half, or stop, closed by close, end its
	// wait (ckptDelay).
	ckpt        bool
	hurry, stop chan struct{}
	delay       time.Duration
	// filled is how much of the file is written (zeros or records).
	filled int64
	// written counts the bytes of records appended since Open, synced
	// those of them known durable; both only grow.
	written, synced int64
	syncing         bool
	// failed sticks once an fdatasync failed: the kernel may have dropped
	// the pages it could not write, so no later sync proves anything.
	failed error
	// maxRecs bounds the records of a half (journalRecs; tests lower it).
	// beforeSync, in tests, runs once a record is written and before it
	// is synced.
	maxRecs    int
	beforeSync func()
}

// errJournalFull is record's answer for a record larger than a half (never
// for journalMax).
var errJournalFull = errors.New("journal: record too large")

// openJournal opens (creating it if needed) DIR/journal and replays it into
// the store's blocks; both halves then start empty.
func (s *Store) openJournal() error {
	name := filepath.Join(s.dir, "journal")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	j := &journal{f: f, maxRecs: journalRecs, delay: ckptDelay, stop: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	for k := range j.halves {
		j.halves[k].dirs = make(map[string]struct{})
	}
	fi, err := f.Stat()
	if err == nil {
		j.filled = fi.Size()
		err = s.replay(j)
	}
	// Both halves start empty; the second is given a header only when it
	// exists or is first used (switchLocked).
	if err == nil && j.filled > journalHalf {
		err = j.restart(1)
	}
	if err == nil {
		err = j.restart(0)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("journal %s: %w", name, err)
	}
	j.cur, j.off = 0, journalHeaderSize
	if fi.Size() == 0 {
		if _, err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	s.jn = j
	return nil
}

// readHeader returns the generation of half k's header; ok is false for a
// half without a valid one (new, or a header torn while written, which
// happens only when every record before it was made durable).
func (j *journal) readHeader(k int) (gen uint32, ok bool) {
	var b [12]byte
	if _, err := j.f.ReadAt(b[:], int64(k)*journalHalf); err != nil {
		return 0, false
	}
	if binary.LittleEndian.Uint32(b[0:]) != journalMagic ||
		crc32.ChecksumIEEE(b[:8]) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[4:]), true
}

// restart empties half k under a new generation: the caller made every
// record of it durable in its block file, and no record goes to it
// meanwhile (at Open, or its checkpoint running). Called without j.mu
// except at Open.
func (j *journal) restart(k int) error {
	j.mu.Lock()
	j.gen++
	gen := j.gen
	// Written up to the header, so that no hole is left before it.
	err := j.fillLocked(int64(k)*journalHalf + journalHeaderSize)
	j.mu.Unlock()
	if err != nil {
		return err
	}
	var b [journalHeaderSize]byte
	binary.LittleEndian.PutUint32(b[0:], journalMagic)
	binary.LittleEndian.PutUint32(b[4:], gen)
	binary.LittleEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
	if _, err := j.f.WriteAt(b[:], int64(k)*journalHalf); err != nil {
		return err
	}
	if err := fdatasync(j.f); err != nil {
		return err
	}
	j.mu.Lock()
	j.halves[k].gen = gen
	j.mu.Unlock()
	return nil
}

// record appends h's record (data) to the journal, to cover block file p,
// and returns once it is durable.
func (j *journal) record(h block.Hash, data []byte, p string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return j.failed
	}
	n := int64(recHeaderSize + len(data))
	if n > journalHalf-journalHeaderSize {
		return errJournalFull
	}
	for j.fullLocked(n) {
		if err := j.switchLocked(n); err != nil {
			return err
		}
	}
	if j.off+n > j.filled {
		if err := j.fillLocked(j.off + n); err != nil {
			return err
		}
	}
	hf := &j.halves[j.cur]
	buf := make([]byte, n)
	binary.LittleEndian.PutUint32(buf[0:], recMagic)
	binary.LittleEndian.PutUint32(buf[4:], hf.gen)
	binary.LittleEndian.PutUint32(buf[8:], uint32(len(data)))
	copy(buf[16:recHeaderSize], h[:])
	copy(buf[recHeaderSize:], data)
	if _, err := j.f.WriteAt(buf, j.off); err != nil {
		return err
	}
	j.off += n
	j.written += n
	hf.paths = append(hf.paths, p)
	leaf := filepath.Dir(p)
	hf.dirs[leaf] = struct{}{}
	hf.dirs[filepath.Dir(leaf)] = struct{}{}
	hf.dirs[filepath.Dir(filepath.Dir(leaf))] = struct{}{}
	if j.beforeSync != nil {
		j.beforeSync()
	}
	return j.syncLocked(j.written)
}

// fullLocked reports whether a record of n bytes does not fit the current
// half.
func (j *journal) fullLocked(n int64) bool {
	return j.off+n > int64(j.cur+1)*journalHalf || len(j.halves[j.cur].paths) >= j.maxRecs
}

// switchLocked sends the records to the other half, once its checkpoint
// has finished (and, the first time, once it has a header), and starts the
// checkpoint of the full one. It may let go of j.mu; the caller checks
// again whether the half is full (another record may have switched).
func (j *journal) switchLocked(n int64) error {
	if j.ckpt && j.hurry != nil {
		close(j.hurry)
		j.hurry = nil
	}
	for j.ckpt && j.failed == nil {
		j.cond.Wait()
	}
	if j.failed != nil {
		return j.failed
	}
	if !j.fullLocked(n) {
		return nil
	}
	if next := 1 - j.cur; j.halves[next].gen == 0 {
		// Never used: the file is made to reach it only now, so
		// that a store that never fills a half never takes both.
		j.ckpt = true
		j.mu.Unlock()
		err := j.restart(next)
		j.mu.Lock()
		j.ckpt = false
		j.cond.Broadcast()
		if err != nil {
			if j.failed == nil {
				j.failed = fmt.Errorf("journal: %w", err)
			}
			return j.failed
		}
		return nil
	}
	full := j.cur
	paths, dirs := j.halves[full].paths, j.halves[full].dirs
	j.halves[full].paths, j.halves[full].dirs = nil, make(map[string]struct{})
	j.cur = 1 - full
	j.off = int64(j.cur)*journalHalf + journalHeaderSize
	j.ckpt = true
	j.hurry = make(chan struct{})
	go j.checkpoint(full, paths, dirs, j.hurry)
	return nil
}

// checkpoint makes every block file of half k durable (its file and its
// directories) and empties the half, after ckptDelay unless hurried. A
// file removed since (the garbage collector) is skipped: its removal may be
// lost in a crash, which brings it back (harmless, package doc). A failure
// sticks: the records stay for the next Open, and Puts write their blocks
// durably instead. Stopped by close, it leaves the records for the next
// Open's replay.
func (j *journal) checkpoint(k int, paths []string, dirs map[string]struct{}, hurry chan struct{}) {
	t := time.NewTimer(j.delay)
	select {
	case <-t.C:
	case <-hurry:
		t.Stop()
	case <-j.stop:
		t.Stop()
		j.mu.Lock()
		j.ckpt = false
		j.cond.Broadcast()
		j.mu.Unlock()
		return
	}
	err := syncFiles(paths, dirs)
	if err == nil {
		err = j.restart(k)
	}
	j.mu.Lock()
	if err != nil && j.failed == nil {
		j.failed = fmt.Errorf("journal checkpoint: %w", err)
	}
	j.ckpt = false
	j.hurry = nil
	j.cond.Broadcast()
	j.mu.Unlock()
}

// fillLocked writes zeros from filled on, in journalFill steps, until the
// file holds at least end bytes. On failure the file is cut back.
func (j *journal) fillLocked(end int64) error {
	if end <= j.filled {
		return nil
	}
	to := min(2*journalHalf, (end+journalFill-1)/journalFill*journalFill)
	zeros := make([]byte, to-j.filled)
	if _, err := j.f.WriteAt(zeros, j.filled); err != nil {
		j.f.Truncate(j.filled)
		return classify(err)
	}
	j.filled = to
	return nil
}

// syncLocked returns once the records up to byte end (of written) are
// durable: it runs an fdatasync, or waits for one that started after they
// were written. j.mu is let go while the fdatasync runs, so that records
// appended meanwhile ride on the next one.
func (j *journal) syncLocked(end int64) error {
	for j.synced < end {
		if j.failed != nil {
			return j.failed
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		target := j.written
		j.mu.Unlock()
		err := fdatasync(j.f)
		j.mu.Lock()
		j.syncing = false
		if err != nil {
			j.failed = fmt.Errorf("journal fdatasync: %w", err)
		} else {
			j.synced = max(j.synced, target)
		}
		j.cond.Broadcast()
	}
	return nil
}

// syncFiles fsyncs the files and directories named, skipping those gone.
func syncFiles(paths []string, dirs map[string]struct{}) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("fsync %s: %w", p, err)
		}
	}
	for d := range dirs {
		if _, err := syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// close closes the journal's file. Its records stay for the next Open,
// which replays them.
func (j *journal) close() error {
	close(j.stop)
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.syncing || j.ckpt {
		j.cond.Wait()
	}
	if j.failed == nil {
		j.failed = errors.New("journal closed")
	}
	return j.f.Close()
}

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
