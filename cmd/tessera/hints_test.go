package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"testing"

	"tessera/internal/up"
)

// TestNextStep: the first-hour failures get a next step naming what to run;
// other errors get none. The mount point cases run for real in
// test/e2e TestFirstHourErrorsSayWhatNext.
func TestNextStep(t *testing.T) {
	saved := noDevFuse
	t.Cleanup(func() { noDevFuse = saved })
	noDevFuse = func() bool { return false }
	cases := []struct {
		err  error
		want string
	}{
		{&up.MountPointError{Dir: "/mnt/my data", Err: up.ErrMountBusy}, "umount '/mnt/my data' as root"},
		{fmt.Errorf("up: %w", &up.MountPointError{Dir: "/mnt/x", Err: fmt.Errorf("stat: %w", fs.ErrNotExist)}), "mkdir -p /mnt/x"},
		{fmt.Errorf("mount /mnt/x: %w", &exec.Error{Name: "/bin/fusermount", Err: exec.ErrNotFound}), "install the fuse3 package"},
		{errors.New("mount /mnt/x: permission denied"), ""},
		{errors.New("meta service 10.0.0.1:7400: connection refused"), ""},
	}
	for _, c := range cases {
		got := nextStep(c.err)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("nextStep(%v) = %q, want it to hold %q", c.err, got, c.want)
		}
	}
	noDevFuse = func() bool { return true }
	if got := nextStep(errors.New("mount /mnt/x: no such device")); !strings.Contains(got, "modprobe fuse") {
		t.Errorf("without /dev/fuse: %q, want the module or the container's device", got)
	}
	if got := nextStep(errors.New("fsck: 2 lost blocks")); got != "" {
		t.Errorf("without /dev/fuse, an error that is not the mount's: %q, want none", got)
	}
}
