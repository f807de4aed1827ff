package fuse

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// killPending reports whether thread pid (a FUSE request's caller) is
// being killed: SIGKILL pending for it or its process — the kernel turns
// every fatal signal without a handler into a pending SIGKILL — or the
// thread gone already.
func killPending(pid uint32) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	defer f.Close()
	return sigkillIn(f)
}

// sigkillIn reports whether a /proc/PID/status text shows SIGKILL pending.
func sigkillIn(status io.Reader) bool {
	const sigkill = 1 << (9 - 1)
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		line := sc.Text()
		for _, field := range []string{"SigPnd:", "ShdPnd:"} {
			if rest, ok := strings.CutPrefix(line, field); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(rest), 16, 64)
				if err == nil && mask&sigkill != 0 {
					return true
				}
			}
		}
	}
	return false
}
