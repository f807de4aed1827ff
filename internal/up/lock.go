package up

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockName is the lock file of a data directory: flock'd by the process
// that runs on the directory (`tessera up`, `tessera meta`), which writes
// its PID and command line into it so that a second one can say who holds
// it.
const LockName = "tessera.lock"

// ErrLocked is wrapped by LockDataDir's error when another process holds
// the directory.
var ErrLocked = errors.New("in use")

// LockDataDir takes the lock of data directory dir (created if needed) for
// this process, or fails with an error wrapping ErrLocked that names the
// process holding it. The lock goes with the process (flock), so a killed
// run leaves no stale lock. release drops it.
func LockDataDir(dir string) (release func(), err error) {
	if err := checkDataDir(dir); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, LockName)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s %w by %s (lock %s): stop it first, or give another data directory",
				dir, ErrLocked, describeHolder(string(holder)), p)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	me := fmt.Sprintf("pid %d: %s\n", os.Getpid(), strings.Join(os.Args, " "))
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(me), 0)
	}
	return func() {
		f.Truncate(0)
		f.Close() // drops the flock
	}, nil
}

// describeHolder turns the lock file's content into "process PID (COMMAND)".
func describeHolder(s string) string {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "pid ")
	if !ok {
		return "another process"
	}
	pid, cmd, _ := strings.Cut(rest, ": ")
	if _, err := strconv.Atoi(pid); err != nil {
		return "another process"
	}
	if cmd == "" {
		return "process " + pid
	}
	return fmt.Sprintf("process %s (%s)", pid, cmd)
}
