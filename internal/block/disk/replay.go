package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"tessera/internal/block"
)

// replay makes every valid record of j's halves durable under its block's
// name (journal.go): a block file lost or torn in a crash is written again
// from the record, one that survived is fsync'd. It runs at Open, before
// the scan counts the blocks.
func (s *Store) replay(j *journal) error {
	var paths []string
	dirs := make(map[string]struct{})
	hdr := make([]byte, recHeaderSize)
	for k := range j.halves {
		gen, ok := j.readHeader(k)
		if !ok {
			continue
		}
		j.gen = max(j.gen, gen)
		lim := min(j.filled, int64(k+1)*journalHalf)
		for off := int64(k)*journalHalf + journalHeaderSize; off+recHeaderSize <= lim; {
			if _, err := j.f.ReadAt(hdr, off); err != nil {
				return err
			}
			n := int64(binary.LittleEndian.Uint32(hdr[8:]))
			if binary.LittleEndian.Uint32(hdr[0:]) != recMagic || binary.LittleEndian.Uint32(hdr[4:]) != gen ||
				n > journalMax || off+recHeaderSize+n > lim {
				break
			}
			data := make([]byte, n)
			if _, err := j.f.ReadAt(data, off+recHeaderSize); err != nil {
				return err
			}
			var h block.Hash
			copy(h[:], hdr[16:recHeaderSize])
			if block.Sum(data) != h {
				break // torn: never acknowledged
			}
			p := s.Path(h)
			if err := s.restore(h, p, data); err != nil {
				return err
			}
			paths = append(paths, p)
			leaf := filepath.Dir(p)
			dirs[leaf] = struct{}{}
			dirs[filepath.Dir(leaf)] = struct{}{}
			off += recHeaderSize + n
		}
	}
	if len(paths) > 0 {
		dirs[s.blocks] = struct{}{}
	}
	return syncFiles(paths, dirs)
}

// restore puts data back under p unless p holds it already.
func (s *Store) restore(h block.Hash, p string, data []byte) error {
	got, err := os.ReadFile(p)
	if err == nil && bytes.Equal(got, data) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return classify(err)
	}
	tmp, _, err := s.writeTmp(data, true)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return classify(err)
	}
	return stampLocked(p)
}
