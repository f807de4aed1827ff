package writeback

import (
	"context"
	"fmt"
	"path"
	"strings"

	"tessera/internal/meta"
)

// Stats reads a fileset queue's figures (meta.WritebackAPI has it).
type Stats interface {
	WritebackStats(ctx context.Context, root meta.Ino) (meta.WBStats, error)
}

// WaitDrained waits until fileset root's queue holds nothing but
// operations failed for good, which it returns; progress sees the
// figures at every look, and wait is called between looks (it sleeps).
// The gateways apply the queue; this only watches it (tessera fileset
// flush).
func WaitDrained(ctx context.Context, s Stats, root meta.Ino, wait func(context.Context) error, progress func(meta.WBStats)) ([]meta.WBOp, error) {
	for {
		st, err := s.WritebackStats(ctx, root)
		if err != nil {
			return nil, fmt.Errorf("write-back queue of %d: %w", root, err)
		}
		if progress != nil {
			progress(st)
		}
		if st.Depth <= len(st.Failed) {
			return st.Failed, nil
		}
		if err := wait(ctx); err != nil {
			return nil, fmt.Errorf("waiting for the write-back queue of %d (%d queued): %w", root, st.Depth, err)
		}
	}
}

// Resolve returns the inode of a namespace path ("/a/b") by lookups from
// the root.
func Resolve(ctx context.Context, api interface {
	Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error)
}, p string) (meta.Ino, error) {
	ino := meta.RootIno
	for _, name := range strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/") {
		if name == "" {
			continue
		}
		in, err := api.Lookup(ctx, ino, name)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", p, name, err)
		}
		ino = in.Ino
	}
	return ino, nil
}
