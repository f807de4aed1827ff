package fuse

import (
	"os"
	"strings"
	"testing"
)

func TestSigkillIn(t *testing.T) {
	for _, c := range []struct {
		status string
		want   bool
	}{
		{"Name:\tdd\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n", false},
		{"SigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n", true},  // SIGKILL on the thread
		{"SigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n", true},  // on the process
		{"SigPnd:\t0000000000000002\nShdPnd:\t0000000000004000\n", false}, // SIGINT, SIGTERM handled
		{"garbage", false},
	} {
		if got := sigkillIn(strings.NewReader(c.status)); got != c.want {
			t.Errorf("%q: %v, want %v", c.status, got, c.want)
		}
	}
	if killPending(uint32(os.Getpid())) {
		t.Error("this test process reads as being killed")
	}
	if !killPending(1 << 30) {
		t.Error("a thread that does not exist does not read as gone")
	}
}
