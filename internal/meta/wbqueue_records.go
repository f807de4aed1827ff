package meta

import (
	"encoding/binary"
	"fmt"
)

// The write-back queue's records (issue 14; docs/design/2026-11-24-writeback.md).
// Every key of the family starts with pfxWriteback, then a kind byte:
//
//	"w" "f" root         -> flush requested at (unix ns, 8 bytes): what was queued before is due
//	"w" "n" root         -> the fileset's next queue sequence number (8 bytes)
//	"w" "q" root seq     -> queued operation
//	"w" "l" ino          -> root seq of the latest operation queued for ino
//	"w" "a" ino          -> ino's parent and name in the cache (fileset inodes)
//	"w" "t" ino          -> home's change token after the last apply of ino
const pfxWriteback = 'w'

const (
	wbNext   = 'n'
	wbFlush  = 'f'
	wbQueue  = 'q'
	wbLatest = 'l'
	wbName   = 'a'
	wbToken  = 't'
)

func wbKey(kind byte, id Ino) []byte {
	k := make([]byte, 2, 2+8+8)
	k[0], k[1] = pfxWriteback, kind
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

func wbQueueKey(root Ino, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(wbKey(wbQueue, root), seq)
}

// WBKind is the kind of a queued operation.
type WBKind uint8

// The operation kinds. Put writes the file's whole content as Tessera has
// it when the operation is applied (so writes coalesce); Flag New says the
// file was created at Path by this operation.
const (
	OpPut WBKind = iota + 1
	OpMkdir
	OpSymlink
	OpRemove
	OpRmdir
	OpRename
	OpSetattr
)

// String names the kind.
func (k WBKind) String() string {
	names := [...]string{"", "put", "mkdir", "symlink", "remove", "rmdir", "rename", "setattr"}
	if int(k) < len(names) && k != 0 {
		return names[k]
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// WBOp is one queued operation. Paths are relative to the fileset root as
// they were when the operation was made; applying the queue in order (or
// in any order that keeps the dependencies, see Overlaps) replays the
// cache's namespace at home.
type WBOp struct {
	Root Ino
	Seq  uint64
	Kind WBKind
	New  bool // Put: the file was created by this operation
	Ino  Ino
	// At is when the operation was queued (unix ns); coalescing keeps the
	// first time, so the queue's oldest At is the measured sync lag.
	At int64
	// Ver counts the coalesced changes; an applier deletes the entry only
	// if it is unchanged.
	Ver    uint32
	Path   string
	Path2  string // Rename's target
	Mode   uint32 // permission bits (Put/Mkdir/Setattr)
	Mtime  int64  // Setattr
	Target string // Symlink
	// The claim: who applies it, until when (unix ns), and how it went.
	Owner    string
	Until    int64
	Attempts uint32
	Err      string
	// Permanent marks an operation that failed for good (Err says why);
	// it stays for status until an operator drops it (DropWriteback).
	Permanent bool
}

// maxWBPath bounds a queued path.
const maxWBPath = 1 << 16

func encodeWBOp(op *WBOp) []byte {
	b := []byte{recordV1, byte(op.Kind), 0}
	if op.New {
		b[2] |= 1
	}
	if op.Permanent {
		b[2] |= 2
	}
	b = binary.BigEndian.AppendUint64(b, uint64(op.Ino))
	b = binary.BigEndian.AppendUint64(b, uint64(op.At))
	b = binary.BigEndian.AppendUint32(b, op.Ver)
	b = appendString(b, op.Path)
	b = appendString(b, op.Path2)
	b = binary.BigEndian.AppendUint32(b, op.Mode)
	b = binary.BigEndian.AppendUint64(b, uint64(op.Mtime))
	b = appendString(b, op.Target)
	b = appendString(b, op.Owner)
	b = binary.BigEndian.AppendUint64(b, uint64(op.Until))
	b = binary.BigEndian.AppendUint32(b, op.Attempts)
	return appendString(b, op.Err)
}

func decodeWBOp(root Ino, seq uint64, v []byte) (*WBOp, error) {
	r := reader{b: v, what: "write-back op"}
	r.version()
	hdr := r.fixed(2)
	op := &WBOp{Root: root, Seq: seq}
	if hdr != nil {
		op.Kind = WBKind(hdr[0])
		op.New = hdr[1]&1 != 0
		op.Permanent = hdr[1]&2 != 0
		if op.Kind < OpPut || op.Kind > OpSetattr || hdr[1]&^3 != 0 {
			r.fail("kind %d flags %#x", hdr[0], hdr[1])
		}
	}
	op.Ino = Ino(r.u64())
	op.At = int64(r.u64())
	op.Ver = r.u32()
	op.Path = r.str(maxWBPath, "path")
	op.Path2 = r.str(maxWBPath, "path2")
	op.Mode = r.u32()
	op.Mtime = int64(r.u64())
	op.Target = r.str(MaxTargetLen, "target")
	op.Owner = r.str(256, "owner")
	op.Until = int64(r.u64())
	op.Attempts = r.u32()
	op.Err = r.str(4096, "error")
	return op, r.end()
}

// name record: 1 | parent 8 | name str
func encodeWBName(parent Ino, name string) []byte {
	b := binary.BigEndian.AppendUint64([]byte{recordV1}, uint64(parent))
	return appendString(b, name)
}

func decodeWBName(v []byte) (Ino, string, error) {
	r := reader{b: v, what: "write-back name"}
	r.version()
	p := Ino(r.u64())
	n := r.str(MaxNameLen, "name")
	return p, n, r.end()
}

// latest record: 1 | root 8 | seq 8
func encodeWBLatest(root Ino, seq uint64) []byte {
	b := binary.BigEndian.AppendUint64([]byte{recordV1}, uint64(root))
	return binary.BigEndian.AppendUint64(b, seq)
}

func decodeWBLatest(v []byte) (Ino, uint64, error) {
	r := reader{b: v, what: "write-back latest"}
	r.version()
	root := Ino(r.u64())
	seq := r.u64()
	return root, seq, r.end()
}
