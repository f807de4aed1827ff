package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestUpShAfterKill9: scripts/up.sh, the README's first command, run as
// it is; its whole process group killed with SIGKILL (the mount stays,
// stale: ENOTCONN); up.sh again on the same directories detaches the
// stale mount and comes back with the file written before. It also links
// the binary where TESSERA_LINK_DIR says (/usr/local/bin by default).
func TestUpShAfterKill9(t *testing.T) {
	needBinary(t)
	root, err := filepath.Abs("../..")
	must(t, err)
	base := t.TempDir()
	data, mnt, links := filepath.Join(base, "data"), filepath.Join(base, "mnt"), filepath.Join(base, "bin")
	must(t, os.Mkdir(links, 0o755))
	var procs []*upSh
	t.Cleanup(func() {
		for _, p := range procs {
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		}
		for _, p := range procs {
			<-p.done
		}
		if mounted(mnt) {
			exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	start := func(run int) *upSh {
		out := &lockedBuf{}
		c := exec.Command("bash", "scripts/up.sh", data, mnt)
		c.Dir = root
		c.Env = append(os.Environ(), "TESSERA_LINK_DIR="+links, "TESSERA_UP_FLAGS=--block-servers 1")
		c.Stdout, c.Stderr = out, out
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		must(t, c.Start())
		p := &upSh{cmd: c, out: out, done: make(chan struct{})}
		go func() { c.Wait(); close(p.done) }()
		procs = append(procs, p)
		t.Logf("up.sh run %d: pid %d", run, c.Process.Pid)
		return p
	}
	first := start(1)
	waitUpSh(t, "the first up.sh to mount", first, func() bool { return mounted(mnt) && statOK(mnt) })
	must(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("x\n"), 0o644))
	f, err := os.Open(filepath.Join(mnt, "f"))
	must(t, err)
	must(t, f.Sync())
	f.Close()
	if target, err := os.Readlink(filepath.Join(links, "tessera")); err != nil || target != filepath.Join(root, "bin", "tessera") {
		t.Errorf("up.sh linked %s/tessera -> %q (%v), want %s/bin/tessera", links, target, err, root)
	}

	must(t, syscall.Kill(-first.cmd.Process.Pid, syscall.SIGKILL))
	<-first.done
	procs = procs[:0]
	// The kernel answers from its attribute cache for a while; then the
	// stale mount point gives ENOTCONN, which made up.sh's mkdir -p fail.
	var serr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, serr = os.Stat(mnt); isErrno(serr, syscall.ENOTCONN) {
			break
		}
	}
	if !isErrno(serr, syscall.ENOTCONN) {
		t.Fatalf("after kill -9 the mount point answers %v, want ENOTCONN", serr)
	}

	second := start(2)
	waitUpSh(t, "the second up.sh to serve the file", second, func() bool {
		b, err := os.ReadFile(filepath.Join(mnt, "f"))
		return err == nil && string(b) == "x\n"
	})
	if !strings.Contains(second.out.String(), "detaching the stale mount") {
		t.Errorf("the second up.sh did not say it detached the stale mount:\n%s", tail(second.out.String()))
	}
}

// upSh is one run of scripts/up.sh; done is closed when it has exited.
type upSh struct {
	cmd  *exec.Cmd
	out  *lockedBuf
	done chan struct{}
}

// waitUpSh polls cond for up to 4 minutes (up.sh builds the binary
// first), failing with the tail of p's output if p exits or time is up.
func waitUpSh(t *testing.T, what string, p *upSh, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(4 * time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("up.sh exited before %s:\n%s", what, tail(p.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s:\n%s", what, tail(p.out.String()))
		}
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// mounted reports whether a FUSE file system is mounted at dir, stale or not.
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/mounts")
	return err == nil && strings.Contains(string(b), " "+dir+" fuse")
}

func statOK(p string) bool { _, err := os.Stat(p); return err == nil }

// lockedBuf is a bytes.Buffer the process writes while the test reads.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
