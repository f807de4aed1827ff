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

	"tessera/internal/block"
)

// The journal of small Puts (package doc, Durability): a small block is
// written to its file and linked into place without an fsync, and its
// content is appended to DIR/journal, which is fdatasync'd once for every
// Put waiting on it (group commit). After a crash Open replays the journal:
// every record whose content hashes to its name is made durable under its
// name again. When the journal is full its block files are fsync'd with
// their directories and it starts over, under a new generation.
//
// Layout of DIR/journal: a header of journalHeaderSize bytes (magic, the
// generation, a CRC of both), then records: recHeaderSize bytes (magic,
// the generation, the length, the block's hash) and the block's bytes. A
// record is valid when its magic and generation are the header's and its
// bytes hash to its hash (the name of a block is the BLAKE3 of its content,
// so a torn record never passes); replay stops at the first that is not.
// The file grows in journalFill steps of zeros, written ahead of the
// records, so that the fdatasync of a record in the space written before
// flushes only data, not the file's size.

const (
	// journalMax is the largest block the journal takes; larger ones are
	// written durably to their files (one block's fsync is then a small
	// part of its cost).
	journalMax = 64 << 10
	// journalSize bounds the journal file; journalRecs the records of a
	// generation (each costs an fsync of its file at the checkpoint).
	journalSize = 8 << 20
	journalRecs = 1024
	// journalFill is the step of zeros the file grows by.
	journalFill = 256 << 10

	journalHeaderSize = 4096
	recHeaderSize     = 48
	journalMagic      = 0x4a535354 // "TSSJ"
	recMagic          = 0x52535354 // "TSSR"
)

// journal is DIR/journal while the store is open.
type journal struct {
	f *os.File

	mu   sync.Mutex
	cond *sync.Cond // broadcast when a sync ends
	gen  uint32
	off  int64 // where the next record goes
	// filled is how much of the file is written (zeros or records).
	filled int64
	// written counts the bytes of records appended since Open, synced
	// those of them known durable; both only grow.
	written, synced int64
	syncing         bool
	// failed sticks once an fdatasync failed: the kernel may have dropped
	// the pages it could not write, so no later sync proves anything.
	failed error
	// paths are the block files the generation's records cover, dirs
	// their leaves: what the checkpoint fsyncs.
	paths []string
	dirs  map[string]struct{}
	// maxRecs bounds the records of a generation (journalRecs; tests
	// lower it). beforeSync, in tests, runs once a record is written and
	// before it is synced.
	maxRecs    int
	beforeSync func()
}

// errJournalFull is append's answer for a record that does not fit the
// journal's generation even after a checkpoint (never for journalMax).
var errJournalFull = errors.New("journal: record too large")

// openJournal opens (creating it if needed) DIR/journal and replays it into
// the store's blocks; the journal starts a new generation.
func (s *Store) openJournal() error {
	name := filepath.Join(s.dir, "journal")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	j := &journal{f: f, dirs: make(map[string]struct{}), maxRecs: journalRecs}
	j.cond = sync.NewCond(&j.mu)
	fi, err := f.Stat()
	if err == nil {
		j.filled = fi.Size()
		err = s.replay(j)
	}
	if err == nil {
		err = j.restart()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("journal %s: %w", name, err)
	}
	if fi.Size() == 0 {
		if _, err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	s.jn = j
	return nil
}

// readHeader returns the generation of the journal's header; ok is false
// for a file without a valid one (new, or a header torn while written,
// which happens only when every record before it was made durable).
func (j *journal) readHeader() (gen uint32, ok bool) {
	var b [12]byte
	if _, err := j.f.ReadAt(b[:], 0); err != nil {
		return 0, false
	}
	if binary.LittleEndian.Uint32(b[0:]) != journalMagic ||
		crc32.ChecksumIEEE(b[:8]) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[4:]), true
}

// restart begins generation gen+1 with no records: the caller made every
// record of the current one durable in its block file.
func (j *journal) restart() error {
	var b [journalHeaderSize]byte
	j.gen++
	binary.LittleEndian.PutUint32(b[0:], journalMagic)
	binary.LittleEndian.PutUint32(b[4:], j.gen)
	binary.LittleEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
	if _, err := j.f.WriteAt(b[:], 0); err != nil {
		return err
	}
	if err := fdatasync(j.f); err != nil {
		return err
	}
	j.filled = max(j.filled, journalHeaderSize)
	j.off = journalHeaderSize
	j.paths = j.paths[:0]
	clear(j.dirs)
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
	if j.off+n > journalSize || len(j.paths) >= j.maxRecs {
		if err := j.checkpointLocked(); err != nil {
			return err
		}
		if j.off+n > journalSize {
			return errJournalFull
		}
	}
	if j.off+n > j.filled {
		if err := j.fillLocked(j.off + n); err != nil {
			return err
		}
	}
	buf := make([]byte, n)
	binary.LittleEndian.PutUint32(buf[0:], recMagic)
	binary.LittleEndian.PutUint32(buf[4:], j.gen)
	binary.LittleEndian.PutUint32(buf[8:], uint32(len(data)))
	copy(buf[16:recHeaderSize], h[:])
	copy(buf[recHeaderSize:], data)
	if _, err := j.f.WriteAt(buf, j.off); err != nil {
		return err
	}
	j.off += n
	j.written += n
	// The leaf and its parents: a leaf made for a journaled Put was not
	// synced into them (ensureDir).
	j.paths = append(j.paths, p)
	leaf := filepath.Dir(p)
	j.dirs[leaf] = struct{}{}
	j.dirs[filepath.Dir(leaf)] = struct{}{}
	j.dirs[filepath.Dir(filepath.Dir(leaf))] = struct{}{}
	if j.beforeSync != nil {
		j.beforeSync()
	}
	return j.syncLocked(j.written)
}

// fillLocked writes zeros from filled on, in journalFill steps, until the
// file holds at least end bytes. On failure the file is cut back.
func (j *journal) fillLocked(end int64) error {
	to := min(journalSize, (end+journalFill-1)/journalFill*journalFill)
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

// checkpointLocked makes every block file of the generation durable (its
// file and its leaf, which holds its name) and restarts the journal. A
// file removed since (the garbage collector) is skipped: its removal may
// be lost in a crash, which brings it back (harmless, package doc).
func (j *journal) checkpointLocked() error {
	for j.syncing {
		j.cond.Wait()
	}
	if err := syncFiles(j.paths, j.dirs); err != nil {
		return err
	}
	if err := j.restart(); err != nil {
		return err
	}
	// Every record written is in a durable block file now.
	j.synced = j.written
	j.cond.Broadcast()
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
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.syncing {
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
