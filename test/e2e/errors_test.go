package e2e

import (
	"context"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"tessera/test/cluster"
)

// blockPaths returns every stored copy of the block named h, per the layout
// DIR/blocks/<server>/blocks/ab/cd/<hash>. If none is there it reports where
// (if anywhere) a file of that name is.
func blockPaths(t testing.TB, c *cluster.Cluster, h string) []string {
	t.Helper()
	ps, err := filepath.Glob(filepath.Join(c.DataDir(), "blocks", "*", "blocks", h[:2], h[2:4], h))
	must(t, err)
	if len(ps) > 0 {
		return ps
	}
	var elsewhere []string
	filepath.WalkDir(c.DataDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == h {
			elsewhere = append(elsewhere, p)
		}
		return nil
	})
	t.Fatalf("block %s is not at %s/blocks/<server>/blocks/%s/%s/%s; found at %v", h, c.DataDir(), h[:2], h[2:4], h, elsewhere)
	return nil
}

// TestCorruptBlockGivesEIO flips a byte in every stored copy of one block of
// a file; after a restart (no client cache) reading that block fails with
// EIO and never returns wrong bytes, the rest of the file still reads, and
// fsck names the block.
func TestCorruptBlockGivesEIO(t *testing.T) {
	c := startCluster(t)
	const bs = 4 * mib
	data := randBytes(30, 3*bs+100*kib)
	p := filepath.Join(c.Mount(), "f")
	writeFileSync(t, p, data)
	must(t, c.Stop())

	hashOf := func(i int) string {
		sum := blake3.Sum256(data[i*bs : min((i+1)*bs, len(data))])
		return hex.EncodeToString(sum[:])
	}
	for i := range 4 {
		blockPaths(t, c, hashOf(i)) // every block is stored where the layout says
	}
	const bad = 1
	badHash := hashOf(bad)
	for _, bp := range blockPaths(t, c, badHash) {
		f, err := os.OpenFile(bp, os.O_RDWR, 0)
		must(t, err)
		b := make([]byte, 1)
		_, err = f.ReadAt(b, 12345)
		must(t, err)
		b[0] ^= 0x01
		_, err = f.WriteAt(b, 12345)
		must(t, err)
		must(t, f.Close())
		t.Logf("flipped a bit in %s", bp)
	}
	restart(t, c)

	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	eio := 0
	buf := make([]byte, 512*kib)
	for off := 0; off < len(data); off += len(buf) {
		n, err := preadFull(f, buf, int64(off))
		want := data[off:min(off+len(buf), len(data))]
		inBad := off/bs == bad
		// One FUSE read request (readahead included) may span the edge of
		// the bad block and fail as a whole: EIO near it is tolerated.
		nearBad := off+len(buf) > bad*bs-2*mib && off < (bad+1)*bs+2*mib
		switch {
		case err != nil && isErrno(err, syscall.EIO):
			eio++
			if !nearBad {
				t.Errorf("read at %d (block %d, intact and far from the bad one): EIO", off, off/bs)
			} else if !inBad {
				t.Logf("read at %d (intact block %d, near the bad one): EIO", off, off/bs)
			}
		case err != nil:
			t.Errorf("read at %d: %v, want EIO or the data", off, err)
		case inBad:
			t.Errorf("read at %d in the corrupt block %d returned %d bytes instead of EIO (equal to the original: %v)", off, bad, n, string(buf[:n]) == string(want))
		default:
			wantBytes(t, "intact block", buf[:n], want)
		}
	}
	if eio == 0 {
		t.Error("no read failed with EIO")
	}
	if _, err := os.ReadFile(p); !isErrno(err, syscall.EIO) {
		t.Errorf("reading the whole file: %v, want EIO", err)
	}

	res := tessera(t, c, "fsck")
	if res.ExitCode == 0 || !strings.Contains(res.Stdout+res.Stderr, badHash) {
		t.Errorf("tessera fsck with a corrupt block: exit %d, want non-zero and a line naming %s:\n%s%s", res.ExitCode, badHash, res.Stdout, res.Stderr)
	}
}

// TestBadFlag: an unknown flag is one line naming it and a non-zero exit.
func TestBadFlag(t *testing.T) {
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cluster.RunBin(ctx, suite.bin, "up", "--no-such-flag")
	must(t, err)
	out := strings.TrimSpace(res.Stdout + res.Stderr)
	lines := strings.Split(out, "\n")
	if res.ExitCode == 0 || len(lines) != 1 || !strings.Contains(out, "no-such-flag") {
		t.Errorf("tessera up --no-such-flag: exit %d, %d lines, want non-zero and one line naming the flag:\n%s", res.ExitCode, len(lines), out)
	}
}
