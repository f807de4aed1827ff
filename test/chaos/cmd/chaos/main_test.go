package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/test/chaos/chaostest"
)

// TestSignalStopsTheCluster: a chaos run ended with SIGTERM (a user's
// Ctrl-C, a CI timeout) stops every process it started and leaves no FUSE
// mount behind, and says it was interrupted (exit 2), not that it passed.
// Before, the command died on the signal and its daemons and mounts stayed.
func TestSignalStopsTheCluster(t *testing.T) {
	dir, bin, etcdBin := chaostest.Binaries(t, "starts a real cluster")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	chaosBin := filepath.Join(dir, "chaos")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", chaosBin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build chaos: %v\n%s", err, b)
	}
	runDir := filepath.Join(dir, "w")
	cmd := exec.Command(chaosBin, "--minutes", "30", "--seed", "3", "--dir", runDir, "--bin", bin, "--etcd", etcdBin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // only when the command did not stop by itself
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		unmountUnder(t, runDir)
	})
	var lines []string
	sc := bufio.NewScanner(out)
	signalled := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		// The cluster is up once the mounts are reported.
		if !signalled && strings.Contains(sc.Text(), "chaos: mount m2 at") {
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			signalled = true
		}
	}
	err = cmd.Wait()
	if !signalled {
		t.Fatalf("the cluster never came up: %v\n%s\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit after SIGTERM: %v, want status 2\n%s", err, strings.Join(lines, "\n"))
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, "INTERRUPTED") {
		t.Errorf("last line %q does not say the run was interrupted", last)
	}
	if m := mountsUnder(t, runDir); len(m) > 0 {
		t.Errorf("still mounted after the command exited: %v", m)
	}
	if p := processesUnder(runDir); len(p) > 0 {
		t.Errorf("processes of the run still alive after the command exited: %v", p)
	}
}

// mountsUnder lists the mount points below dir in /proc/mounts.
func mountsUnder(t *testing.T, dir string) []string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	var m []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			m = append(m, f[1])
		}
	}
	return m
}

func unmountUnder(t *testing.T, dir string) {
	for _, m := range mountsUnder(t, dir) {
		exec.Command("fusermount3", "-u", "-z", m).Run()
	}
}

// processesUnder lists the pids whose command line names dir (the run's
// daemons all take their data directory in it).
func processesUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || e.Name() == "self" {
			continue
		}
		if bytes.Contains(b, []byte(dir+"/")) && !bytes.Contains(b, []byte("--dir\x00"+dir)) {
			pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return pids
}
