package disk

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"tessera/internal/block"
)

var _ block.SpaceReporter = (*Store)(nil)

// Space returns the bytes free to an unprivileged writer and the size of
// the file system the store is on (statfs of its directory).
func (s *Store) Space(ctx context.Context) (free, size int64, err error) {
	sp, err := s.SpaceInfo(ctx)
	return sp.Free, sp.Size, err
}

var _ block.Spacer = (*Store)(nil)

// SpaceInfo implements block.SpaceReporter: OnDisk, the statfs of the
// store's directory, and as the file system's name this host's machine id
// with the directory's device number and the file system's id.
func (s *Store) SpaceInfo(ctx context.Context) (block.Space, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return block.Space{}, fmt.Errorf("statfs %s: %w", s.dir, err)
	}
	var dst syscall.Stat_t
	if err := syscall.Stat(s.dir, &dst); err != nil {
		return block.Space{}, fmt.Errorf("stat %s: %w", s.dir, err)
	}
	name := fmt.Sprintf("%s:%x:%08x%08x", hostID(), dst.Dev, uint32(st.Fsid.X__val[0]), uint32(st.Fsid.X__val[1]))
	return block.Space{
		OnDisk: s.OnDisk(),
		Free:   int64(st.Bavail) * st.Bsize,
		Size:   int64(st.Blocks) * st.Bsize,
		FS:     name[:min(len(name), block.MaxFSName)],
	}, nil
}

// hostID names this host for Space.FS: its machine id, else its host name.
var hostID = sync.OnceValue(func() string {
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(p); err == nil {
			if id := strings.TrimSpace(string(b)); id != "" && len(id) <= 64 {
				return id
			}
		}
	}
	h, _ := os.Hostname()
	return h[:min(len(h), 64)]
})
