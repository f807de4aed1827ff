package fsx

import (
	"fmt"
	"os"
)

// inode is the model of one file: its bytes and how many names it has.
type inode struct {
	id    int
	data  []byte
	nlink int
}

func (ino *inode) size() int64 { return int64(len(ino.data)) }

// resize sets the length to n; bytes that appear are zero, also when the
// backing array still holds bytes from before an earlier shrink.
func (ino *inode) resize(n int64) {
	old := int64(len(ino.data))
	switch {
	case n <= old:
		ino.data = ino.data[:n]
	case n <= int64(cap(ino.data)):
		ino.data = ino.data[:n]
		clear(ino.data[old:])
	default:
		nd := make([]byte, n, max(n, 2*int64(cap(ino.data))))
		copy(nd, ino.data)
		ino.data = nd
	}
}

// writeAt applies a positional write, extending (with a hole) as needed.
func (ino *inode) writeAt(p []byte, off int64) {
	if end := off + int64(len(p)); end > ino.size() {
		ino.resize(end)
	}
	copy(ino.data[off:], p)
}

// readAt returns what a read of n bytes at off must return.
func (ino *inode) readAt(off, n int64) []byte {
	if off >= ino.size() {
		return nil
	}
	end := min(off+n, ino.size())
	return ino.data[off:end]
}

// handle is one open descriptor of the run.
type handle struct {
	slot int
	f    *os.File
	ino  *inode
	name string // the name it was opened by (the file may since be renamed or unlinked)
}

func (h *handle) String() string {
	if h.f == nil {
		return fmt.Sprintf("h%d(closed)", h.slot)
	}
	return fmt.Sprintf("h%d(%s ino%d)", h.slot, h.name, h.ino.id)
}

// firstDiff returns the index of the first differing byte (or the shorter
// length when one is a prefix of the other), or -1 when equal.
func firstDiff(want, got []byte) int {
	n := min(len(want), len(got))
	for i := 0; i < n; i += 4096 {
		j := min(i+4096, n)
		if string(want[i:j]) != string(got[i:j]) {
			for k := i; k < j; k++ {
				if want[k] != got[k] {
					return k
				}
			}
		}
	}
	if len(want) != len(got) {
		return n
	}
	return -1
}

// describeDiff renders the neighbourhood of the first difference.
func describeDiff(want, got []byte, base int64) string {
	i := firstDiff(want, got)
	if i < 0 {
		return "equal"
	}
	lo := max(0, i-8)
	hi := func(b []byte) int { return min(len(b), i+24) }
	ndiff := 0
	for k := i; k < min(len(want), len(got)); k++ {
		if want[k] != got[k] {
			ndiff++
		}
	}
	return fmt.Sprintf("got %d bytes, want %d; first difference at file offset %d (%d differing bytes in the overlap)\n  want[%d:]: % x\n  got [%d:]: % x",
		len(got), len(want), base+int64(i), ndiff,
		base+int64(lo), want[lo:hi(want)], base+int64(lo), got[min(lo, len(got)):hi(got)])
}
