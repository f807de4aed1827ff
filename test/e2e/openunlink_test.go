package e2e

// Open files across mounts (issue 11, items 1 and 2): an inode open on one
// mount stays, with its blocks, while another mount removes its last name
// (POSIX; NFS silly-rename, CephFS caps), and goes once the last mount
// holding it closes it. The meta service holds the opens in its client
// sessions; internal/meta/opens.go has the protocol and metatest the rules
// with an injected clock.

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tessera/test/cluster"
)

// orphanGrace is how long a restarted meta service leaves orphans alone
// (meta.DefaultOrphanGrace: twice the session TTL).
const orphanGrace = 2 * sessionTTL

// startOpenUnlink starts meta (reclaiming released blocks after 1 s, on
// metaArgs), two block servers and two mounts, and returns the cluster and
// the mounts' roots.
func startOpenUnlink(t *testing.T, metaArgs ...string) (*cluster.Multi, string, string) {
	t.Helper()
	m := startMulti(t, 2, append([]string{"--reclaim-after", "1s", "--block-size", itoa(64 << 10)}, metaArgs...)...)
	m0, m1 := addMount(t, m), addMount(t, m)
	return m, m0.Mount(), m1.Mount()
}

// clusterInt reads key of st, failing the test when it is missing.
func clusterInt(t *testing.T, st cluster.ClusterStatus, key string) int64 {
	t.Helper()
	n, err := st.Raw.Int(key)
	if err != nil {
		t.Fatalf("status %q: %v\n%s", key, err, st.Text)
	}
	return n
}

// heldFile writes data to name through mount 0, opens it read-write
// through mount 1 and returns the descriptor (closed at cleanup).
func heldFile(t *testing.T, root0, root1, name string, data []byte) *os.File {
	t.Helper()
	writeFileSync(t, filepath.Join(root0, name), data)
	f, err := os.OpenFile(filepath.Join(root1, name), os.O_RDWR, 0)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// checkHeld checks that the open, unlinked file f on mount 1 still reads
// want, answers fstat with nlink 0, and takes a write that reads back.
func checkHeld(t *testing.T, f *os.File, want []byte) {
	t.Helper()
	got := make([]byte, len(want)+1)
	n, err := preadFull(f, got, 0)
	if err != nil {
		t.Fatalf("read of the file removed on the other mount: %v", err)
	}
	wantBytes(t, "read of the file removed on the other mount", got[:n], want)
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatalf("fstat of the file removed on the other mount: %v", err)
	}
	if st.Nlink != 0 || st.Size != int64(len(want)) {
		t.Errorf("fstat of the file removed on the other mount: nlink %d size %d, want 0 and %d", st.Nlink, st.Size, len(want))
	}
	patch := []byte("written after the unlink")
	if _, err := f.WriteAt(patch, 1000); err != nil {
		t.Fatalf("write to the file removed on the other mount: %v", err)
	}
	must(t, f.Sync())
	back := make([]byte, len(patch))
	if _, err := f.ReadAt(back, 1000); err != nil {
		t.Fatalf("read back of the write: %v", err)
	}
	wantBytes(t, "read back of the write after the unlink", back, patch)
	copy(want[1000:], patch)
}

// TestOpenUnlinkAcrossMounts: mount 1 holds a file open, mount 0 removes
// it; mount 1 reads, stats and writes it; fsck finds its blocks; once mount
// 1 closes it, the inode goes and (after the reclaim window) its blocks.
func TestOpenUnlinkAcrossMounts(t *testing.T) {
	m, root0, root1 := startOpenUnlink(t)
	before := waitFor(t, m, time.Minute, "the empty file system", func(st cluster.ClusterStatus) bool { return true })
	files0 := clusterInt(t, before, "files")

	data := make([]byte, 300<<10) // several 64 KiB blocks
	r := rand.New(rand.NewPCG(11, 1))
	for i := 4096; i < len(data); i++ {
		data[i] = byte(r.Uint32())
	}
	f := heldFile(t, root0, root1, "f", data)
	must(t, os.Remove(filepath.Join(root0, "f")))
	_, err := os.Stat(filepath.Join(root0, "f"))
	wantErrno(t, "stat of the removed name on mount 0", err, syscall.ENOENT)

	checkHeld(t, f, data)
	// Blocks a held orphan names are live: a collection keeps them, and
	// fsck finds them all.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{{"gc", "--grace", "0s"}, {"fsck"}} {
		res, err := m.Run(ctx, args...)
		must(t, err)
		if res.ExitCode != 0 {
			t.Fatalf("%v while the orphan is held: exit %d\n%s%s", args, res.ExitCode, res.Stdout, res.Stderr)
		}
		if args[0] == "gc" && !strings.Contains(res.Stdout, "removed 0 blocks") {
			t.Fatalf("gc while the orphan is held removed blocks:\n%s", res.Stdout)
		}
	}
	held := waitFor(t, m, time.Minute, "the held orphan is counted", func(st cluster.ClusterStatus) bool {
		return clusterInt(t, st, "files") == files0+1
	})
	if clusterInt(t, held, "blocks") == 0 {
		t.Fatalf("no blocks stored while the orphan is held:\n%s", held.Text)
	}
	// Still there after a reclaim window and a reaper round.
	time.Sleep(2 * sessionTTL)
	checkHeld(t, f, data)

	must(t, f.Close())
	waitFor(t, m, time.Minute, "the orphan and its blocks gone after the last close", func(st cluster.ClusterStatus) bool {
		return clusterInt(t, st, "files") == files0 && clusterInt(t, st, "blocks") == 0
	})
}

// TestOpenUnlinkRenameOver: a rename over a file held open on another mount
// leaves the replaced inode an orphan held open.
func TestOpenUnlinkRenameOver(t *testing.T) {
	m, root0, root1 := startOpenUnlink(t)
	data := bytes.Repeat([]byte("old content "), 10_000)
	f := heldFile(t, root0, root1, "f", data)
	writeFileSync(t, filepath.Join(root0, "g"), []byte("new content"))
	must(t, os.Rename(filepath.Join(root0, "g"), filepath.Join(root0, "f")))
	wantContent(t, filepath.Join(root0, "f"), []byte("new content"))
	checkHeld(t, f, data)
	must(t, f.Close())
	waitFor(t, m, time.Minute, "the replaced inode gone after the last close", func(st cluster.ClusterStatus) bool {
		return clusterInt(t, st, "files") == 2 // the root and the new f
	})
}

// TestOpenUnlinkHardLink: removing one of two names of a file open
// elsewhere leaves a linked file, not an orphan: closing it keeps it.
func TestOpenUnlinkHardLink(t *testing.T) {
	_, root0, root1 := startOpenUnlink(t)
	data := []byte("linked twice")
	f := heldFile(t, root0, root1, "f", data)
	must(t, os.Link(filepath.Join(root0, "f"), filepath.Join(root0, "g")))
	must(t, os.Remove(filepath.Join(root0, "f")))
	var st unix.Stat_t
	must(t, unix.Fstat(int(f.Fd()), &st))
	if st.Nlink != 1 {
		t.Errorf("fstat after removing one of two names: nlink %d, want 1", st.Nlink)
	}
	must(t, f.Close())
	wantContent(t, filepath.Join(root1, "g"), data)
}

// TestOpenUnlinkSessionExpiry: a mount whose session expired (it was
// stopped for longer than the TTL) announces what it holds open with its
// new session, so a removal on another mount afterwards leaves the file to
// it.
func TestOpenUnlinkSessionExpiry(t *testing.T) {
	m, root0, root1 := startOpenUnlink(t)
	data := bytes.Repeat([]byte("held across an expiry "), 5000)
	f := heldFile(t, root0, root1, "f", data)
	mount1 := m.Mounts()[1]
	mark := m.LogMark()
	must(t, syscall.Kill(mount1.PID(), syscall.SIGSTOP))
	time.Sleep(sessionTTL + 2*time.Second) // the session expires at the service
	must(t, syscall.Kill(mount1.PID(), syscall.SIGCONT))
	waitLog(t, m, mark, "re-announced the open inodes")
	must(t, os.Remove(filepath.Join(root0, "f")))
	time.Sleep(2 * sessionTTL) // a reaper round or two
	checkHeld(t, f, data)
}

// TestOpenUnlinkHolderKilled: a mount killed while it holds an orphan open
// never releases it; the meta role's reaper removes it, and the reclaimer
// its blocks, once the mount's session expired.
func TestOpenUnlinkHolderKilled(t *testing.T) {
	m, root0, root1 := startOpenUnlink(t)
	f := heldFile(t, root0, root1, "f", bytes.Repeat([]byte("held by a mount that dies "), 5000))
	must(t, os.Remove(filepath.Join(root0, "f")))
	held := waitFor(t, m, time.Minute, "the held orphan is counted", func(st cluster.ClusterStatus) bool {
		return clusterInt(t, st, "files") == 2
	})
	if clusterInt(t, held, "blocks") == 0 {
		t.Fatalf("no blocks stored while the orphan is held:\n%s", held.Text)
	}
	must(t, m.Mounts()[1].Kill9())
	f.Close() // the mount is gone: the close reaches nobody
	waitFor(t, m, time.Minute, "the orphan and its blocks gone after the holder's session expired", func(st cluster.ClusterStatus) bool {
		return clusterInt(t, st, "files") == 1 && clusterInt(t, st, "blocks") == 0
	})
}

// TestOpenUnlinkMetaRestart: the meta service restarts while a mount holds
// an orphan open; the mount announces it to the new service within the
// restart grace, and the orphan stays past it.
func TestOpenUnlinkMetaRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	ln.Close()
	m, root0, root1 := startOpenUnlink(t, "--listen", addr)
	data := bytes.Repeat([]byte("held across a restart "), 5000)
	f := heldFile(t, root0, root1, "f", data)
	must(t, os.Remove(filepath.Join(root0, "f")))
	mark := m.LogMark()
	must(t, m.Meta().Restart())
	waitLog(t, m, mark, "re-announced the open inodes")
	time.Sleep(orphanGrace + sessionTTL) // past the grace, a reaper round
	checkHeld(t, f, data)
	must(t, f.Close())
	waitFor(t, m, time.Minute, "the orphan gone after the last close", func(st cluster.ClusterStatus) bool {
		return clusterInt(t, st, "files") == 1 && clusterInt(t, st, "blocks") == 0
	})
}

// TestOpenDirRenamedOver: an fd on a directory that a rename replaced (on
// this mount or another) keeps answering fstat, with nlink 0, as on ext4;
// the directory goes at the last close.
func TestOpenDirRenamedOver(t *testing.T) {
	m, root0, root1 := startOpenUnlink(t)
	// Fresh names each time: a mount's kernel keeps a name it looked up
	// for the entry TTL, whatever another mount did to it since.
	for _, tc := range []struct{ name, holder, a, b string }{{"same mount", root0, "a0", "b0"}, {"other mount", root1, "a1", "b1"}} {
		a, b := filepath.Join(root0, tc.a), filepath.Join(root0, tc.b)
		must(t, os.Mkdir(a, 0o755))
		must(t, os.Mkdir(b, 0o700))
		writeFile(t, filepath.Join(a, "in-a"), []byte("x"))
		fd, err := unix.Open(filepath.Join(tc.holder, tc.b), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		must(t, err)
		var st unix.Stat_t
		must(t, unix.Fstat(fd, &st))
		ino := st.Ino
		must(t, unix.Rename(a, b)) // os.Rename refuses a directory over a directory
		// On the other mount the kernel may answer from its attribute
		// cache until the rename's callback reaches it: wait (bounded)
		// for nlink 0, failing at once on an error.
		for i := 0; ; i++ {
			if err := unix.Fstat(fd, &st); err != nil {
				t.Fatalf("%s: fstat of the directory renamed over: %v", tc.name, err)
			}
			if st.Nlink == 0 || i == 100 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st.Ino != ino || st.Nlink != 0 || st.Mode&0o777 != 0o700 {
			t.Errorf("%s: fstat of the directory renamed over: ino %d nlink %d mode %o, want %d, 0, 700", tc.name, st.Ino, st.Nlink, st.Mode&0o777, ino)
		}
		if _, err := unix.Openat(fd, "new", unix.O_CREAT|unix.O_WRONLY, 0o644); err == nil {
			t.Errorf("%s: created a file in the removed directory", tc.name)
		}
		must(t, unix.Close(fd))
		wantContent(t, filepath.Join(root0, tc.b, "in-a"), []byte("x"))
		must(t, os.RemoveAll(b))
	}
	waitFor(t, m, time.Minute, "the replaced directories gone after the last close", func(st cluster.ClusterStatus) bool {
		return clusterInt(t, st, "files") == 1
	})
}

// waitLog waits (bounded) for the cluster's output after mark to contain
// s: a point to go on from, not a check (what follows checks behaviour).
func waitLog(t *testing.T, m *cluster.Multi, mark int64, s string) {
	t.Helper()
	for i := 0; i < 600; i++ {
		if strings.Contains(m.LogSince(mark), s) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("no %q in the cluster's output within a minute; going on", s)
}
