package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MountEntry is one line of /proc/self/mountinfo.
type MountEntry struct {
	MountPoint string
	FSType     string
	Source     string
	Major      int
	Minor      int
}

// Mounts lists the mounts whose mount point is dir (there can be several
// stacked ones).
func Mounts(dir string) ([]MountEntry, error) {
	dir = filepath.Clean(dir)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []MountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp != dir {
			continue
		}
		e := MountEntry{MountPoint: mp}
		if maj, min, ok := strings.Cut(fields[2], ":"); ok {
			e.Major, _ = strconv.Atoi(maj)
			e.Minor, _ = strconv.Atoi(min)
		}
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" && i+2 < len(fields) {
				e.FSType = fields[i+1]
				e.Source = unescapeMount(fields[i+2])
				break
			}
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// IsMounted reports whether anything is mounted on dir.
func IsMounted(dir string) bool {
	ms, err := Mounts(dir)
	return err == nil && len(ms) > 0
}

// IsFuseMounted reports whether a FUSE file system is mounted on dir.
func IsFuseMounted(dir string) bool {
	ms, _ := Mounts(dir)
	for _, m := range ms {
		if strings.HasPrefix(m.FSType, "fuse") {
			return true
		}
	}
	return false
}

// ForceUnmount removes every mount on dir: it aborts the FUSE connection
// when fusectl is available (so no process stays stuck on a dead daemon)
// and detaches the mount. It is a no-op when nothing is mounted.
func ForceUnmount(dir string) error {
	for range 8 {
		ms, err := Mounts(dir)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		m := ms[len(ms)-1]
		if strings.HasPrefix(m.FSType, "fuse") {
			abort := fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", m.Minor)
			_ = os.WriteFile(abort, []byte("1"), 0)
		}
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	if IsMounted(dir) {
		return fmt.Errorf("unmount %s: still mounted", dir)
	}
	return nil
}

// unescapeMount undoes the octal escapes (\040 for a space, …) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
