package meta

import (
	"encoding/binary"

	"tessera/internal/block"
)

// Key-kind prefixes; see the key schema in doc.go.
const (
	pfxInode   = 'i'
	pfxDentry  = 'd'
	pfxSegment = 'r'
	pfxXattr   = 'x'
	pfxOrphan  = 'o'
	pfxCounter = 'c'
	pfxServer  = 's'
	pfxMeta    = 'm'
	pfxRef     = 'h'
	pfxRelease = 'u'
	pfxCompose = 'k'
	// pfxLinks and pfxOrphanDir: where hard-linked files and orphans
	// lie (links.go).
	pfxLinks     = 'p'
	pfxOrphanDir = 'q'
)

// Counter kinds, the byte after pfxCounter.
const (
	ctrNextIno = 'n'
	ctrFiles   = 'f'
	ctrBytes   = 'b'
)

// CounterShards is the number of shards each usage counter is split into.
const CounterShards = 16

// SegmentBlocks is the number of block hashes one recipe segment holds.
const SegmentBlocks = 1024

var (
	keyEpoch  = []byte("mepoch")
	keyFormat = []byte("mformat")
	// keySessions says the store was served to client sessions, which a
	// restarted service must give time to re-announce their open files.
	keySessions = []byte("msessions")
	keyNext     = []byte{pfxCounter, ctrNextIno}
)

func be64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func inoKey(pfx byte, ino Ino) []byte {
	k := make([]byte, 9, 9+8)
	k[0] = pfx
	binary.BigEndian.PutUint64(k[1:], uint64(ino))
	return k
}

// inodeKey is "i" ino.
func inodeKey(ino Ino) []byte { return inoKey(pfxInode, ino) }

// orphanKey is "o" ino.
func orphanKey(ino Ino) []byte { return inoKey(pfxOrphan, ino) }

// dentryPrefix is "d" parent: every entry of the directory starts with it.
func dentryPrefix(parent Ino) []byte { return inoKey(pfxDentry, parent) }

// dentryKey is "d" parent name.
func dentryKey(parent Ino, name string) []byte {
	return append(dentryPrefix(parent), name...)
}

// segmentPrefix is "r" ino: every recipe segment of the file starts with it.
func segmentPrefix(ino Ino) []byte { return inoKey(pfxSegment, ino) }

// segmentKey is "r" ino seg.
func segmentKey(ino Ino, seg uint64) []byte {
	return binary.BigEndian.AppendUint64(segmentPrefix(ino), seg)
}

// xattrPrefix is "x" ino.
func xattrPrefix(ino Ino) []byte { return inoKey(pfxXattr, ino) }

// xattrKey is "x" ino name.
func xattrKey(ino Ino, name string) []byte { return append(xattrPrefix(ino), name...) }

// counterKey is "c" kind shard.
func counterKey(kind byte, ino Ino) []byte {
	return []byte{pfxCounter, kind, byte(uint64(ino) % CounterShards)}
}

// serverKey is "s" id.
func serverKey(id string) []byte { return append([]byte{pfxServer}, id...) }

// refKey is "h" hash.
func refKey(h block.Hash) []byte { return append([]byte{pfxRef}, h[:]...) }

// releaseKey is "u" at hash: releases sort by the time they were made.
func releaseKey(at int64, h block.Hash) []byte {
	k := make([]byte, 1, 1+8+block.HashSize)
	k[0] = pfxRelease
	k = binary.BigEndian.AppendUint64(k, uint64(at))
	return append(k, h[:]...)
}

// parseRefKey returns the block hash of an "h" key.
func parseRefKey(k []byte) (block.Hash, error) {
	if len(k) != 1+block.HashSize || k[0] != pfxRef {
		return block.Hash{}, corruptf("reference key %q: want 'h' + %d bytes", k, block.HashSize)
	}
	return block.Hash(k[1:]), nil
}

// parseReleaseKey splits a "u" key into time and block hash.
func parseReleaseKey(k []byte) (int64, block.Hash, error) {
	if len(k) != 1+8+block.HashSize || k[0] != pfxRelease {
		return 0, block.Hash{}, corruptf("release key %q: want 'u' + %d bytes", k, 8+block.HashSize)
	}
	return int64(be64(k[1:])), block.Hash(k[9:]), nil
}

func parseInoKey(pfx byte, k []byte, what string) (Ino, error) {
	if len(k) != 9 || k[0] != pfx {
		return 0, corruptf("%s key %q: want %q + 8 bytes", what, k, pfx)
	}
	return Ino(be64(k[1:])), nil
}

// parseInodeKey returns the inode number of an "i" key.
func parseInodeKey(k []byte) (Ino, error) { return parseInoKey(pfxInode, k, "inode") }

// parseOrphanKey returns the inode number of an "o" key.
func parseOrphanKey(k []byte) (Ino, error) { return parseInoKey(pfxOrphan, k, "orphan") }

// parseDentryKey splits a "d" key into parent and name.
func parseDentryKey(k []byte) (Ino, string, error) {
	return parseNameKey(pfxDentry, k, "dentry")
}

// parseXattrKey splits an "x" key into inode and name.
func parseXattrKey(k []byte) (Ino, string, error) {
	return parseNameKey(pfxXattr, k, "xattr")
}

func parseNameKey(pfx byte, k []byte, what string) (Ino, string, error) {
	if len(k) < 10 || k[0] != pfx {
		return 0, "", corruptf("%s key %q: want %q + 8 bytes + name", what, k, pfx)
	}
	if len(k)-9 > 255 {
		return 0, "", corruptf("%s key %q: name of %d bytes", what, k, len(k)-9)
	}
	return Ino(be64(k[1:])), string(k[9:]), nil
}

// parseSegmentKey splits an "r" key into inode and segment number.
func parseSegmentKey(k []byte) (Ino, uint64, error) {
	if len(k) != 17 || k[0] != pfxSegment {
		return 0, 0, corruptf("segment key %q: want 'r' + 16 bytes", k)
	}
	return Ino(be64(k[1:])), be64(k[9:]), nil
}

// parseServerKey returns the server ID of an "s" key.
func parseServerKey(k []byte) (string, error) {
	if len(k) < 2 || k[0] != pfxServer || len(k)-1 > MaxServerID {
		return "", corruptf("server key %q: want 's' + 1..%d bytes", k, MaxServerID)
	}
	return string(k[1:]), nil
}

// parseCounterKey splits a sharded "c" key into kind and shard.
func parseCounterKey(k []byte) (kind byte, shard int, err error) {
	if len(k) != 3 || k[0] != pfxCounter || (k[1] != ctrFiles && k[1] != ctrBytes) || k[2] >= CounterShards {
		return 0, 0, corruptf("counter key %q", k)
	}
	return k[1], int(k[2]), nil
}

// segOf returns the segment of a block index and its slot in the segment.
func segOf(index uint64) (seg uint64, slot int) {
	return index / SegmentBlocks, int(index % SegmentBlocks)
}
