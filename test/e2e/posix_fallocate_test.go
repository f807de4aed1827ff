package e2e

// fallocate(2) modes that fsx probes (issue 11, item 5).

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFallocateModes: PUNCH_HOLE|KEEP_SIZE and ZERO_RANGE (with and
// without KEEP_SIZE) read back zeros over the range, keep the rest, and
// change the size only for ZERO_RANGE without KEEP_SIZE past the end; the
// ranges cross whole and partial 4 MiB blocks. COLLAPSE_RANGE and
// INSERT_RANGE are refused with EOPNOTSUPP.
func TestFallocateModes(t *testing.T) {
	const mib = 1 << 20
	const size = 10*mib + 123
	cases := []struct {
		name      string
		mode      uint32
		off, n    int64
		wantSize  int64
		zeroUntil int64 // zeros over [off, zeroUntil)
	}{
		{"punch hole across blocks", unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE, 1000, 8*mib + 4000, size, 8*mib + 5000},
		{"punch hole inside a block", unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE, 5*mib + 7, 100, size, 5*mib + 107},
		{"punch hole past the end", unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE, size - 10, 1000, size, size},
		{"zero range", unix.FALLOC_FL_ZERO_RANGE, 3*mib + 1, 2 * mib, size, 5*mib + 1},
		{"zero range past the end, keep size", unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE, size - 100, 1000, size, size},
		{"zero range past the end", unix.FALLOC_FL_ZERO_RANGE, size - 100, 1000, size + 900, size + 900},
	}
	forPolicies(t, func(t *testing.T, d string) {
		for i, c := range cases {
			p := filepath.Join(d, "f"+string(rune('a'+i)))
			data := randBytes(uint64(i+1), size)
			writeFile(t, p, data)
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			must(t, err)
			if err := unix.Fallocate(int(f.Fd()), c.mode, c.off, c.n); err != nil {
				f.Close()
				t.Errorf("%s: fallocate: %v", c.name, err)
				continue
			}
			want := make([]byte, c.wantSize)
			copy(want, data)
			clear(want[c.off:c.zeroUntil])
			if fi, err := f.Stat(); err != nil || fi.Size() != c.wantSize {
				t.Errorf("%s: size %v (%v), want %d", c.name, fi.Size(), err, c.wantSize)
			}
			got := make([]byte, c.wantSize+10)
			n, _ := preadFull(f, got, 0)
			wantBytes(t, c.name+" (same descriptor)", got[:n], want)
			must(t, f.Close())
			wantContent(t, p, want)
		}
		p := filepath.Join(d, "refused")
		writeFile(t, p, randBytes(9, 2*mib))
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		must(t, err)
		defer f.Close()
		for _, m := range []uint32{unix.FALLOC_FL_COLLAPSE_RANGE, unix.FALLOC_FL_INSERT_RANGE} {
			err := unix.Fallocate(int(f.Fd()), m, 0, mib)
			wantErrno(t, fmt.Sprintf("fallocate mode %#x", m), err, syscall.EOPNOTSUPP)
		}
	})
}
