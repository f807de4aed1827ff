package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"tessera/test/cluster"
)

// Helpers of the cluster_*_test.go tests: a cluster of separate processes
// (`tessera meta`, `tessera blockd` ×N, `tessera mount` ×M) run by
// cluster.Multi, and streamed reproducible data so that hundreds of MiB
// need no memory.

// startMulti starts meta and n block servers (ids b0…, host labels h0…) on
// fresh directories and registers a cleanup that stops every process and
// checks that none had died, exited non-zero or left a mount.
func startMulti(t testing.TB, n int, metaArgs ...string) *cluster.Multi {
	t.Helper()
	return startMultiOpts(t, cluster.MultiOptions{BlockServers: n, MetaArgs: metaArgs})
}

func startMultiOpts(t testing.TB, o cluster.MultiOptions) *cluster.Multi {
	t.Helper()
	needBinary(t)
	o.Bin = suite.bin
	o.Dir = t.TempDir()
	m, err := cluster.StartMulti(o)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after TempDir's cleanup, so it runs first: mounts are gone
	// before the directories are removed.
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("cluster output (tail):\n%s", m.LogTail(32<<10))
			// The whole output (goroutine dumps of hung daemons included)
			// outlives the test's directories.
			p := filepath.Join(os.TempDir(), "tessera-"+sanitize(t.Name())+".log")
			if err := os.WriteFile(p, []byte(m.LogSince(0)), 0o644); err == nil {
				t.Logf("whole cluster output: %s", p)
			}
		}
	})
	return m
}

// addMount starts a fresh `tessera mount` (cold caches) and fails the test
// if it does not come up.
func addMount(t testing.TB, m *cluster.Multi, args ...string) *cluster.Daemon {
	t.Helper()
	d, err := m.AddMount(args...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitFor polls `tessera status` (bounded) and fails the test on timeout.
func waitFor(t testing.TB, m *cluster.Multi, timeout time.Duration, what string, cond func(cluster.ClusterStatus) bool) cluster.ClusterStatus {
	t.Helper()
	start := time.Now()
	st, err := m.WaitFor(timeout, what, cond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: after %v", what, time.Since(start).Round(100*time.Millisecond))
	return st
}

// roundAfterNow returns the condition "this status comes from a mover round
// that began after the call". Status reports the mover's latest round,
// and a round lists the recipes before it first reports: a status read
// after a write may still show a round that never saw the write (its
// "under-replicated: 0" and "misplaced: 0" say nothing about the new
// blocks). With N rounds reported at the call, round N+1 may have begun
// before it; round N+2 began after round N+1 ended, so after the call.
func roundAfterNow(t testing.TB, m *cluster.Multi) func(cluster.ClusterStatus) bool {
	t.Helper()
	st := waitFor(t, m, time.Minute, "the mover's round count", func(cluster.ClusterStatus) bool { return true })
	from := st.MoverRounds
	return func(st cluster.ClusterStatus) bool { return st.MoverRounds >= from+2 }
}

// repaired is the condition "the mover has nothing left to do": all of the
// servers in up are up and every other one is down, nothing is
// under-replicated, misplaced or waiting to move.
func repaired(up int) func(cluster.ClusterStatus) bool {
	return func(st cluster.ClusterStatus) bool {
		return st.ServersUp == up && st.UnderReplicated == 0 && st.Misplaced == 0 && st.BytesToMove == 0
	}
}

// stream is size bytes of reproducible pseudo-random data, produced one
// MiB at a time, with the SHA-256 of every MiB to locate a difference.
type stream struct {
	seed uint64
	size int64
	sums [][32]byte
}

func newStream(seed uint64, size int64) *stream {
	s := &stream{seed: seed, size: size}
	for i := int64(0); i*mib < size; i++ {
		s.sums = append(s.sums, sha256.Sum256(s.chunk(i)))
	}
	return s
}

// chunk returns MiB number i (shorter at the end).
func (s *stream) chunk(i int64) []byte {
	n := min(mib, s.size-i*mib)
	var seed [32]byte
	for j := range 8 {
		seed[j] = byte(s.seed >> (8 * j))
		seed[8+j] = byte(i >> (8 * j))
	}
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(seed).Read(b)
	return b
}

// writeStream writes s to a new file in 1 MiB writes with an fsync every
// syncEvery bytes and at the end. after(written) runs after every write
// (for fault injection). Any error of the application's calls is returned.
func writeStream(path string, s *stream, syncEvery int64, after func(written int64)) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var off int64
	for i := range int64(len(s.sums)) {
		b := s.chunk(i)
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("write at %d: %w", off, err)
		}
		off += int64(len(b))
		if syncEvery > 0 && off%syncEvery == 0 {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("fsync at %d: %w", off, err)
			}
		}
		if after != nil {
			after(off)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("final fsync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// checkStream reads path in 1 MiB reads and compares it with s; after(read)
// runs after every read. It returns the first error of a read or the first
// MiB that differs.
func checkStream(path string, s *stream, after func(read int64)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return err
	} else if fi.Size() != s.size {
		return fmt.Errorf("%s: size %d, want %d", path, fi.Size(), s.size)
	}
	buf := make([]byte, mib)
	var off int64
	for i := range int64(len(s.sums)) {
		n, err := io.ReadFull(f, buf[:min(mib, s.size-off)])
		if err != nil {
			return fmt.Errorf("read at %d: %w", off, err)
		}
		if sha256.Sum256(buf[:n]) != s.sums[i] {
			want := s.chunk(i)
			j := 0
			for j < n && buf[j] == want[j] {
				j++
			}
			return fmt.Errorf("%s: wrong bytes at offset %d (MiB %d)", path, off+int64(j), i)
		}
		off += int64(n)
		if after != nil {
			after(off)
		}
	}
	if n, _ := f.Read(buf[:1]); n != 0 {
		return fmt.Errorf("%s: more bytes than %d", path, s.size)
	}
	return nil
}

// copiesOnDisk counts, for every block hash found on any of the servers'
// disks, how many of the servers hold a file of it.
func copiesOnDisk(t testing.TB, servers ...*cluster.Daemon) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, d := range servers {
		fs, err := d.BlockFiles()
		must(t, err)
		for h := range fs {
			n[h]++
		}
	}
	return n
}

// serverLines returns the server lines of a status, for logs.
func serverLines(st cluster.ClusterStatus) string {
	var b bytes.Buffer
	for id, s := range st.Server {
		fmt.Fprintf(&b, "%s: state=%s blocks=%d; ", id, s.State, s.Blocks)
	}
	return b.String()
}

// sizeFlag picks the size of a long transfer: full, or small with -short.
func sizeFlag(full, short int64) int64 {
	if testing.Short() {
		return short
	}
	return full
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
