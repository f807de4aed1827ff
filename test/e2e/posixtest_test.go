package e2e

import (
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// posixtestExclusions names the go-fuse posixtest cases we do not pass on
// purpose, each with the reason. Keep it empty unless a reason is principled.
var posixtestExclusions = map[string]string{
	"FcntlFlockLocksFile": "expects two fds of one process to conflict on F_SETLK (open-file-description " +
		"semantics); Tessera leaves fcntl locks to the kernel, which keeps POSIX per-process record locks " +
		"(TestFcntlLocks checks the conflict between processes)",
}

// TestPosixtest runs go-fuse's posixtest suite, as go-fuse runs it against
// its own file systems (fs/simple_test.go), each case in a fresh directory.
func TestPosixtest(t *testing.T) {
	var cases []string
	for name := range posixtest.All {
		cases = append(cases, name)
	}
	slices.Sort(cases)
	for name := range posixtestExclusions {
		if _, ok := posixtest.All[name]; !ok {
			t.Errorf("exclusion %q names no posixtest case", name)
		}
	}
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			if reason, ok := posixtestExclusions[name]; ok {
				t.Skip(reason)
			}
			posixtest.All[name](t, fsDir(t))
		})
	}
}
