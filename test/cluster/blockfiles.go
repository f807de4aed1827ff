package cluster

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// BlockFiles lists the block files of a block server's data directory,
// DIR/blocks/ab/cd/<64-hex hash>, as hash -> path. Temporary files and
// anything else whose name is not 64 hex digits are left out; a missing
// blocks directory is an empty list.
func BlockFiles(dataDir string) (map[string]string, error) {
	out := map[string]string{}
	root := filepath.Join(dataDir, "blocks")
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a file moved or removed under us, or no blocks yet
			}
			return err
		}
		if e.Type().IsRegular() && isBlockName(e.Name()) {
			out[e.Name()] = path
		}
		return nil
	})
	return out, err
}

func isBlockName(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// BlockFiles lists a block server's block files (see the function BlockFiles).
func (d *Daemon) BlockFiles() (map[string]string, error) {
	if d.dataDir == "" {
		return nil, errors.New(d.name + ": no data directory")
	}
	if _, err := os.Stat(d.dataDir); err != nil {
		return nil, err
	}
	return BlockFiles(d.dataDir)
}
