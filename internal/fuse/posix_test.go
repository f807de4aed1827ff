package fuse

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// posixExcluded lists go-fuse posixtest cases this layer does not pass, with
// the reason.
var posixExcluded = map[string]string{
	"FcntlFlockLocksFile": "expects two fds of one process to conflict (open-file-description locks); " +
		"this mount leaves fcntl locks to the kernel, which keeps POSIX per-process semantics",
}

// TestPosix runs go-fuse's POSIX suite against the FUSE layer alone (in-memory
// meta, one local block store); test/e2e runs it against `tessera up`.
func TestPosix(t *testing.T) {
	mnt := mountForTest(t)
	names := make([]string, 0, len(posixtest.All))
	for n := range posixtest.All {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			if why, ok := posixExcluded[n]; ok {
				t.Skip(why)
			}
			dir := filepath.Join(mnt, n)
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			posixtest.All[n](t, dir)
		})
	}
}
