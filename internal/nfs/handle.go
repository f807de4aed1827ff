package nfs

import (
	"encoding/binary"
	"errors"
	"strconv"

	"tessera/internal/meta"
)

// File handles are made of the cluster, the export and the inode, not of
// a table kept in memory: one stays valid after the server restarts and on
// any other `tessera nfs` of the same cluster and export. Inode numbers
// are never reused (meta's package comment), and the generation is
// checked too: the handle of a deleted inode is stale.
//
//	magic "TSNF" | version 1 | 3 zero bytes | cluster id | export root | inode | generation
//
// (8-byte big-endian fields; 40 bytes, NFSv3 allows 64).
const (
	handleLen     = 40
	handleVersion = 1
)

var handleMagic = [4]byte{'T', 'S', 'N', 'F'}

var errForeignHandle = errors.New("not a handle of this cluster and export")

// fileHandle is a decoded handle.
type fileHandle struct {
	cluster, export uint64
	ino             meta.Ino
	gen             uint64
}

func (h fileHandle) encode() []byte {
	b := make([]byte, handleLen)
	copy(b, handleMagic[:])
	b[4] = handleVersion
	binary.BigEndian.PutUint64(b[8:], h.cluster)
	binary.BigEndian.PutUint64(b[16:], h.export)
	binary.BigEndian.PutUint64(b[24:], uint64(h.ino))
	binary.BigEndian.PutUint64(b[32:], h.gen)
	return b
}

// decodeHandle parses b; anything but a well-formed handle of this
// version is an error (the caller answers NFS3ERR_STALE or BADHANDLE).
func decodeHandle(b []byte) (fileHandle, error) {
	if len(b) != handleLen || [4]byte(b[:4]) != handleMagic || b[4] != handleVersion || b[5]|b[6]|b[7] != 0 {
		return fileHandle{}, errForeignHandle
	}
	return fileHandle{
		cluster: binary.BigEndian.Uint64(b[8:]),
		export:  binary.BigEndian.Uint64(b[16:]),
		ino:     meta.Ino(binary.BigEndian.Uint64(b[24:])),
		gen:     binary.BigEndian.Uint64(b[32:]),
	}, nil
}

// A path handed to go-nfs starts at an inode when its first component is
// inoMark followed by the inode number: go-nfs works with paths, which
// FromHandle makes of a handle. A NUL is never part of a name (vfs refuses
// it), so no name is taken for such a component.
const inoMark = "\x00"

func inoComponent(ino meta.Ino) string { return inoMark + strconv.FormatUint(uint64(ino), 10) }

// parseInoComponent returns the inode a component names, if it is one.
func parseInoComponent(s string) (meta.Ino, bool) {
	if len(s) < 2 || s[0] != 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[1:], 10, 64)
	return meta.Ino(n), err == nil
}
