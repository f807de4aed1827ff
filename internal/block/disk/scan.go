package disk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// scan is Open's walk of the store: it counts the blocks (Usage) and what
// the store takes on disk (OnDisk), notes which fan-out directories exist,
// and removes those left empty (by a crash between a removal and its prune,
// or by a version that never pruned). Nothing else uses the store yet.
func (s *Store) scan() error {
	var blocks, bytes, disk int64
	disk += allocOf(s.blocks)
	l1s, err := os.ReadDir(s.blocks)
	if err != nil {
		return err
	}
	for _, l1 := range l1s {
		b1, ok := fanName(l1)
		if !ok {
			continue
		}
		l1Dir := filepath.Join(s.blocks, l1.Name())
		l2s, err := os.ReadDir(l1Dir)
		if err != nil {
			return err
		}
		kept := len(l2s)
		for _, l2 := range l2s {
			b2, ok := fanName(l2)
			if !ok {
				continue
			}
			leafDir := filepath.Join(l1Dir, l2.Name())
			files, err := os.ReadDir(leafDir)
			if err != nil {
				return err
			}
			if len(files) == 0 {
				if err := syscall.Rmdir(leafDir); err == nil {
					kept--
					continue
				}
			}
			i := int(b1)<<8 | int(b2)
			lf := &s.fan.leaves[i]
			lf.made.Store(true)
			lf.durable.Store(true)
			a := allocOf(leafDir)
			lf.alloc.Store(int32(min(a/512, 1<<31-1)))
			disk += int64(lf.alloc.Load()) * 512
			for _, f := range files {
				info, alloc, ok, err := blockInfo(f, b1, b2)
				if err != nil {
					return err
				}
				if ok {
					blocks++
					bytes += info.Size
					disk += alloc
					lf.n.Add(1)
				}
			}
		}
		if kept == 0 {
			if err := syscall.Rmdir(l1Dir); err == nil {
				continue
			}
		}
		a := allocOf(l1Dir)
		s.fan.l1Alloc[b1].Store(a)
		disk += a
	}
	q, err := quarantined(filepath.Join(s.dir, "quarantine"))
	if err != nil {
		return err
	}
	s.usage.blocks, s.usage.bytes, s.usage.disk = blocks, bytes, disk+q
	return nil
}

// quarantined is what the quarantine directory and its files take on disk.
func quarantined(dir string) (int64, error) {
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := allocOf(dir)
	for _, e := range es {
		if fi, err := e.Info(); err == nil {
			n += allocOfInfo(fi)
		}
	}
	return n, nil
}
