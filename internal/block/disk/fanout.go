package disk

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"tessera/internal/block"
)

// fanOut is the state of the two fan-out levels blocks/xx/yy (package doc,
// Fan-out directories): which leaves exist, how many blocks each holds and
// what the directories take on disk.
//
// Lock order: a first-level lock (lockDir) before a hash stripe; a Remove
// takes its first-level lock only after it has let go of its stripe.
type fanOut struct {
	// l1 serialises the creation of fan-out directories under blocks/xx
	// (read side: Put, from ensureDir to the fsync of the leaf) with
	// their removal (write side: prune), so that a leaf a Put made sure
	// of still exists when the Put links its block into it.
	l1 [256]sync.RWMutex
	// l1Alloc is what the directory blocks/xx takes on disk (bytes), 0
	// while it does not exist.
	l1Alloc [256]atomic.Int64
	// leaves, indexed by the first two bytes of the hash (0xXXYY).
	leaves []leaf
}

// leaf is one directory blocks/xx/yy.
type leaf struct {
	// made is set once the directory exists and is durable, and cleared
	// when it is pruned (both under its first-level lock).
	made atomic.Bool
	// durable is set once the directory's name is durable in its parent
	// and the parent's in blocks/; a leaf made for a journaled Put is not
	// until a Put that needs it so syncs them (the journal's replay and
	// checkpoint cover its own blocks' directories).
	durable atomic.Bool
	// n counts the blocks in it: a hint for prune, which rmdir settles.
	n atomic.Int32
	// alloc is what the directory itself takes on disk, in 512-byte
	// sectors (st_blocks): directories on common file systems never
	// shrink while they exist, so it only grows (raise) until pruned.
	alloc atomic.Int32
}

func newFanOut() fanOut { return fanOut{leaves: make([]leaf, 1<<16)} }

// leafIndex is the index of h's fan-out leaf in fanOut.leaves.
func leafIndex(h block.Hash) int { return int(h[0])<<8 | int(h[1]) }

// dirs returns the paths of fan-out leaf i and of its parent.
func (s *Store) dirs(i int) (l1, l2 string) {
	x := hex.EncodeToString([]byte{byte(i >> 8), byte(i)})
	l1 = filepath.Join(s.blocks, x[0:2])
	return l1, filepath.Join(l1, x[2:4])
}

// lockDir returns the first-level lock of h's fan-out directories.
func (s *Store) lockDir(h block.Hash) *sync.RWMutex { return &s.fan.l1[h[0]] }

// ensureDir creates the fan-out directories of h, once, and makes them
// durable if asked to (the journal covers those of a journaled Put). The
// caller holds lockDir(h) for reading.
func (s *Store) ensureDir(h block.Hash, durable bool) error {
	i := leafIndex(h)
	lf := &s.fan.leaves[i]
	if lf.made.Load() && (!durable || lf.durable.Load()) {
		return nil
	}
	l1, l2 := s.dirs(i)
	// Each creator fsyncs the parents itself, even if another goroutine
	// won the mkdir: that one may not have synced yet.
	err := os.Mkdir(l1, 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return classify(err)
	}
	if err == nil {
		s.fan.l1Alloc[h[0]].Store(allocOf(l1))
		s.addDisk(s.fan.l1Alloc[h[0]].Load())
	}
	if durable {
		if _, err := syncDir(s.blocks); err != nil {
			return classify(err)
		}
	}
	err = os.Mkdir(l2, 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return classify(err)
	}
	if err == nil {
		s.raiseLeaf(i, allocOf(l2))
	}
	if durable {
		if _, err := syncDir(l1); err != nil {
			return classify(err)
		}
		lf.durable.Store(true)
	}
	lf.made.Store(true)
	return nil
}

// raiseLeaf records that leaf i takes at least alloc bytes on disk.
func (s *Store) raiseLeaf(i int, alloc int64) {
	lf := &s.fan.leaves[i]
	sectors := int32(min(alloc/512, 1<<31-1))
	for {
		old := lf.alloc.Load()
		if sectors <= old {
			return
		}
		if lf.alloc.CompareAndSwap(old, sectors) {
			s.addDisk(int64(sectors-old) * 512)
			return
		}
	}
}

// prune removes h's fan-out leaf if it holds no block any more, and its
// parent if that is left empty. It takes lockDir(h), so no Put is between
// making sure of the leaf and linking into it. A directory that is not
// empty (a Put won, or a file that is not a block) stays.
func (s *Store) prune(h block.Hash) {
	mu := s.lockDir(h)
	mu.Lock()
	defer mu.Unlock()
	i := leafIndex(h)
	lf := &s.fan.leaves[i]
	if lf.n.Load() > 0 {
		return
	}
	l1, l2 := s.dirs(i)
	if err := syscall.Rmdir(l2); err != nil && !errors.Is(err, syscall.ENOENT) {
		return // ENOTEMPTY, or something odd: leave it to the next Open
	}
	lf.made.Store(false)
	lf.durable.Store(false)
	s.addDisk(-int64(lf.alloc.Swap(0)) * 512)
	if err := syscall.Rmdir(l1); err == nil || errors.Is(err, syscall.ENOENT) {
		s.addDisk(-s.fan.l1Alloc[h[0]].Swap(0))
	}
}

// allocOf is what the file or directory at p takes on disk (0 if it cannot
// be stat'd).
func allocOf(p string) int64 {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	return allocOfInfo(fi)
}

// allocOfInfo is what the file fi describes takes on disk: its st_blocks.
func allocOfInfo(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

func (s *Store) addDisk(bytes int64) {
	s.usage.Lock()
	s.usage.disk += bytes
	s.usage.Unlock()
}
