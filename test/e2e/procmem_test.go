package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The memory checks of the port-bounds tests (meta, block, gateway): a
// process's resident memory sampled through a burst, its peak held to a
// bound, and its coming back down once the burst is over.

// readRSS is VmRSS of pid, in bytes.
func readRSS(pid int) (int64, error) { return procStatus(pid, "VmRSS:") }

// sampleRSSPeak samples process pid's VmRSS every 20 ms until the
// returned stop is called, which returns the highest seen.
func sampleRSSPeak(pid int) (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r, err := readRSS(pid); err == nil && r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-sampled
		return peak.Load()
	}
}

// vmHWM is the peak resident set size of process pid (VmHWM), in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	v, err := procStatus(pid, "VmHWM:")
	must(t, err)
	return v
}

func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// vmRSS is VmRSS of pid, in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	v, err := readRSS(pid)
	must(t, err)
	return v
}

// checkPeak fails t if the sampled peak or process pid's VmHWM is over
// bound; what says under which load (for the message).
func checkPeak(t *testing.T, pid int, peak, bound int64, what string) {
	t.Helper()
	hwm := vmHWM(t, pid)
	t.Logf("RSS peak %d MiB (VmHWM %d MiB), bound %d MiB", peak>>20, hwm>>20, bound>>20)
	if peak > bound || hwm > bound {
		t.Errorf("RSS peak %d MiB, VmHWM %d MiB%s: over the bound of %d MiB", peak>>20, hwm>>20, what, bound>>20)
	}
}

// waitRSSBack waits until process pid's VmRSS is within slack of base
// again (memtrim gives memory back within its interval once idle); two
// minutes is a hang, which fails t.
func waitRSSBack(t *testing.T, pid int, base, slack int64, after string) {
	t.Helper()
	var rss int64
	pollFor(t, "the RSS to come back down after "+after, func() bool {
		rss = vmRSS(t, pid)
		return rss <= base+slack
	})
	t.Logf("RSS after %s: %d MiB (base %d MiB)", after, rss>>20, base>>20)
}
