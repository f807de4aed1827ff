package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Meta service outages (issue 11 item 6): a mount waits for the meta
// service as an NFS hard mount does, for --meta-timeout, and serves what it
// cached where the policy allows; a restart shorter than the timeout is
// invisible to applications.

// attrExpiry is longer than the mount's kernel caches of entries and
// attributes (1 s under the default policy, session): a stat after it asks
// the mount, which asks the meta service.
const attrExpiry = 2 * time.Second

// rwLoop is the helper op "rwloop PATH": the application of
// TestClusterMetaRestart. It opens PATH read-write and, until its stdin is
// closed, writes a stamp into it and reads the whole file back, checking
// every byte; it prints "started" after the first round. Then it fsyncs and
// closes the file, and reports the hash of what it wrote in extra.
func rwLoop(path string, extra *string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	want, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	buf := make([]byte, len(want))
	for round := 0; ; round++ {
		stamp := []byte(fmt.Sprintf("round %06d", round))
		off := int64(round%8) * 4096
		copy(want[off:], stamp)
		if _, err := f.WriteAt(stamp, off); err != nil {
			return fmt.Errorf("write %d: %w", round, err)
		}
		if _, err := f.ReadAt(buf, 0); err != nil {
			return fmt.Errorf("read %d: %w", round, err)
		}
		if !bytes.Equal(buf, want) {
			return fmt.Errorf("read %d: the bytes differ from those written", round)
		}
		if round == 0 {
			fmt.Println("started")
		}
		select {
		case <-stop:
			if err := f.Sync(); err != nil {
				return fmt.Errorf("fsync: %w", err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("close: %w", err)
			}
			*extra = fmt.Sprintf("%x rounds=%d", sha256.Sum256(want), round+1)
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestClusterMetaRestart: a process holding a file open reads and writes it
// through a restart of `tessera meta` of a few seconds and sees no error; a
// stat made during the outage waits and succeeds once the service is back;
// what was written is there after the close, on this mount and another.
// Before, every operation that reached the meta service failed with EIO
// from the moment it stopped.
func TestClusterMetaRestart(t *testing.T) {
	m := startMulti(t, 1)
	mnt := addMount(t, m).Mount()
	path := filepath.Join(mnt, "open")
	other := filepath.Join(mnt, "stat-me")
	if err := os.WriteFile(path, bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The application is a process of its own: one holding the file open
	// in this process would make the restart's fork and exec flush it.
	app := exec.Command(helperExe(t, false), "rwloop", path)
	app.Env = append(os.Environ(), envHelper+"=1")
	stdin, err := app.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := app.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	app.Stderr = os.Stderr
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Process.Kill(); app.Wait() })
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "started" {
		t.Fatalf("the application did not start: %q %v", out.Text(), out.Err())
	}

	if err := m.Meta().Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(attrExpiry) // the application goes on meanwhile
	stat := make(chan error, 1)
	go func() { _, err := os.Stat(other); stat <- err }()
	select {
	case err := <-stat:
		t.Fatalf("a stat with the meta service down returned %v, want it to wait", err)
	case <-time.After(time.Second):
	}
	if err := m.Meta().Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-stat; err != nil {
		t.Fatalf("stat across the restart: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // a few more rounds with the service back
	stdin.Close()
	if !out.Scan() {
		t.Fatalf("the application said nothing at the end: %v", out.Err())
	}
	res := strings.Fields(out.Text())
	if len(res) != 3 || res[0] != "ok" {
		t.Fatalf("the application, reading and writing through the restart: %q", out.Text())
	}
	t.Logf("application: %s", out.Text())
	for i, p := range []string{path, filepath.Join(addMount(t, m).Mount(), "open")} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if h := fmt.Sprintf("%x", sha256.Sum256(got)); h != res[1] {
			t.Fatalf("mount %d: the file (%d bytes) is not what the application wrote", i, len(got))
		}
	}
}

// TestClusterMetaTimeout: with --meta-timeout 2s, an operation that needs
// the meta service during a longer outage fails with EIO, and the mount
// works again once the service is back.
func TestClusterMetaTimeout(t *testing.T) {
	m := startMulti(t, 1)
	mnt := addMount(t, m, "--meta-timeout", "2s").Mount()
	path := filepath.Join(mnt, "f")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Meta().Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(attrExpiry)
	if _, err := os.Stat(path); !errors.Is(err, syscall.EIO) {
		t.Fatalf("stat during an outage past --meta-timeout: %v, want EIO", err)
	}
	if err := m.Meta().Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stat once the meta service is back: %v", err)
	}
}

// TestClusterMetaWaitKillable: with --meta-timeout 0 (wait forever) a
// process whose stat waits for the meta service still dies when killed:
// the wait ends for a caller with SIGKILL pending, so it is not left in
// state D.
func TestClusterMetaWaitKillable(t *testing.T) {
	m := startMulti(t, 1)
	mnt := addMount(t, m, "--meta-timeout", "0").Mount()
	path := filepath.Join(mnt, "f")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Meta().Stop(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Meta().Start(); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(attrExpiry)
	stat := exec.Command(helperExe(t, false), "stat", path)
	stat.Env = append(os.Environ(), envHelper+"=1")
	if err := stat.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stat.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("a stat with the meta service down and no timeout ended: %v", err)
	case <-time.After(time.Second):
	}
	if err := stat.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard, not a speed check
		t.Fatal("the killed process did not die while its stat waited for the meta service")
	}
}
