package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/test/cluster"
)

// A page may start its own cluster of separate processes (docs/guide/cluster.md
// does: meta, two block servers and a mount, on two "hosts" that are loopback
// addresses). Its blocks keep their data, logs and the PIDs of what they start
// under guideLab (a line per PID in guideLab/pids), mount at guideLabMount and
// listen on the ports guideLabPorts; the test puts its own directories and
// free ports instead, and in cleanup ends what is still running (by PID, and
// only a process of the tessera binary) and unmounts what is still mounted.
const guideLab = "/var/tmp/tessera-lab"

const guideLabMount = "/mnt/lab"

// guideLabHosts are the pages' hosts; each port is free on every one.
var (
	guideLabHosts = []string{"127.0.0.2", "127.0.0.3"}
	guideLabPorts = []string{":7400", ":7401"}
)

// labSetup makes the directories and ports of one page's lab and registers
// its cleanup; it returns the replacements (old, new, …) to apply to the page.
func labSetup(t *testing.T) []string {
	lab, mnt := t.TempDir(), t.TempDir()
	repl := []string{guideLab, lab, guideLabMount, mnt}
	for _, p := range guideLabPorts {
		port, err := freeLabPort(repl)
		if err != nil {
			t.Fatal(err)
		}
		repl = append(repl, p, ":"+port)
	}
	// Registered after the TempDirs, so it runs before they are removed.
	t.Cleanup(func() { labCleanup(t, lab, mnt) })
	return repl
}

// freeLabPort returns a port free on every lab host and not already in repl.
func freeLabPort(repl []string) (string, error) {
	for range 20 {
		l, err := net.Listen("tcp", guideLabHosts[0]+":0")
		if err != nil {
			return "", fmt.Errorf("listen on %s (the guide's first host): %w", guideLabHosts[0], err)
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		ok := !strings.Contains(strings.Join(repl, " ")+" ", ":"+port+" ")
		for _, h := range guideLabHosts[1:] {
			if !ok {
				break
			}
			l2, err := net.Listen("tcp", net.JoinHostPort(h, port))
			if err != nil {
				ok = false
				break
			}
			l2.Close()
		}
		l.Close()
		if ok {
			return port, nil
		}
	}
	return "", fmt.Errorf("no port free on all of %v", guideLabHosts)
}

// labCleanup ends the processes listed in lab/pids that still run the
// tessera binary (SIGTERM, then SIGKILL after 30 s) and unmounts mnt.
func labCleanup(t *testing.T, lab, mnt string) {
	b, err := os.ReadFile(filepath.Join(lab, "pids"))
	if err != nil && !os.IsNotExist(err) {
		t.Errorf("lab pids: %v", err)
	}
	bin, _ := filepath.EvalSymlinks(suite.bin)
	// The last started first: the mount before the servers it uses.
	pids := strings.Fields(string(b))
	slices.Reverse(pids)
	for _, f := range pids {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 {
			t.Errorf("lab pids: %q is not a PID", f)
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != bin {
			continue // ended already (by the page) or not ours
		}
		t.Logf("lab: ending pid %d, still running after the page", pid)
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 300 && alive(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if cluster.IsMounted(mnt) {
		if err := cluster.ForceUnmount(mnt); err != nil {
			t.Errorf("lab mount: %v", err)
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
