package e2e

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"tessera/test/cluster"
)

// Helpers of the consistency_*_test.go tests (issue 4): a cluster of
// separate processes with several mounts, a directory made for the test
// whose policy is set with the xattr, and stamped contents whose origin can
// be read back from any byte range.

// policyXattr names a file's or directory's consistency policy.
const policyXattr = "user.tessera.policy"

// consistencyBlockSize is the block size of the test clusters: small, so
// that records of several writers share a block and files of a few hundred
// KiB span several blocks.
const consistencyBlockSize = 64 << 10

// ccluster is a cluster with its mounts and the test's directory on it.
type ccluster struct {
	m      *cluster.Multi
	mounts []*cluster.Daemon
	dir    string // name of the test's directory under every mount's root
}

// startConsistency starts meta, two block servers (2 replicas, 64 KiB
// blocks) and n mounts (each its own process, started with mountArgs), and
// makes the directory "d" through mount 0 with policy set by the xattr
// (none when policy is "": the mount's default applies).
func startConsistency(t testing.TB, n int, policy string, mountArgs ...string) *ccluster {
	t.Helper()
	m := startMulti(t, 2, "--replicas", "2", "--block-size", itoa(consistencyBlockSize))
	c := &ccluster{m: m, dir: "d"}
	for range n {
		c.mounts = append(c.mounts, addMount(t, m, mountArgs...))
	}
	must(t, os.Mkdir(c.path(0, ""), 0o755))
	if policy != "" {
		setPolicy(t, c.path(0, ""), policy)
	}
	return c
}

// path returns name in the test's directory as mount i sees it.
func (c *ccluster) path(i int, name string) string {
	return filepath.Join(c.mounts[i].Mount(), c.dir, name)
}

// setPolicy sets path's policy through the xattr and fails the test if it
// is refused.
func setPolicy(t testing.TB, path, name string) {
	t.Helper()
	if err := unix.Setxattr(path, policyXattr, []byte(name), 0); err != nil {
		t.Fatalf("setxattr %s %s=%s: %v", path, policyXattr, name, err)
	}
}

// getPolicy returns path's policy xattr.
func getPolicy(path string) (string, error) {
	b := make([]byte, 256)
	n, err := unix.Getxattr(path, policyXattr, b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// stamped returns n bytes (n a multiple of 8) of 8-byte little-endian words
// all equal to id: content whose every aligned word names its writer, so a
// mix of two writes is seen at the word where it changes.
func stamped(id uint64, n int) []byte {
	if n%8 != 0 {
		panic(fmt.Sprintf("stamped: length %d is not a multiple of 8", n))
	}
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], id)
	}
	return b
}

// stampOf returns the id of b if b is entirely one stamped content.
func stampOf(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b)%8 != 0 {
		return 0, false
	}
	id := binary.LittleEndian.Uint64(b)
	for i := 8; i < len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != id {
			return 0, false
		}
	}
	return id, true
}

// describeStamped says what b holds, for failure messages: one stamp, or
// where it stops being one.
func describeStamped(b []byte) string {
	if id, ok := stampOf(b); ok {
		return fmt.Sprintf("%d bytes of stamp %#x", len(b), id)
	}
	if len(b) < 8 {
		return fmt.Sprintf("%d bytes %x", len(b), b)
	}
	first := binary.LittleEndian.Uint64(b)
	for i := 8; i+8 <= len(b); i += 8 {
		if w := binary.LittleEndian.Uint64(b[i:]); w != first {
			return fmt.Sprintf("%d bytes: stamp %#x up to offset %d, then %#x", len(b), first, i, w)
		}
	}
	return fmt.Sprintf("%d bytes of stamp %#x with %d trailing bytes", len(b), first, len(b)%8)
}

// readAll reads f from offset 0 until EOF through pread (without moving
// the handle's offset), in one call of up to limit bytes when the file
// allows it.
func readAll(f *os.File, limit int) ([]byte, error) {
	b := make([]byte, limit)
	n, err := preadFull(f, b, 0)
	return b[:n], err
}
