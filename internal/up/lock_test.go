package up

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestLockDataDirNamesHolder: a second lock of a data directory fails with
// ErrLocked naming the PID of the holder; once released it is free again.
func TestLockDataDirNamesHolder(t *testing.T) {
	dir := t.TempDir()
	release, err := LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDataDir(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v; want ErrLocked naming %s and process %d", err, dir, os.Getpid())
	}
	release()
	again, err := LockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}
