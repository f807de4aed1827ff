package up

import (
	"context"
	"fmt"
	"log/slog"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/client"
	"tessera/internal/fuse"
)

// MountNode is a running FUSE mount: the client and the file system it
// serves. `tessera up` and `tessera mount` both start theirs with
// StartMount, so that the two cannot drift apart.
type MountNode struct {
	Client *client.Client
	dir    string
	srv    *gofuse.Server
	log    *slog.Logger
}

// StartMount mounts a Tessera client made from cfg at dir. Every mount
// keeps a session with the meta service (cfg.Sessions is set: other
// mounts' changes reach this one's caches and the kernel's through
// callbacks), and its opens are held there. A stale mount left at dir by
// a killed process is detached first.
func StartMount(ctx context.Context, cfg client.Config, dir string, debug bool) (*MountNode, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := CleanStaleMount(dir, log); err != nil {
		return nil, err
	}
	inv := new(fuse.Invalidator)
	cfg.Sessions = true
	cfg.OnInvalidate = inv.Invalidate
	cl, err := client.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	fs := fuse.New(cl, fuse.Options{Logger: log, Debug: debug})
	inv.Set(fs)
	srv, err := fuse.Mount(fs, dir)
	if err != nil {
		cl.Close(context.Background())
		return nil, err
	}
	log.Info("mounted", "mount", dir)
	return &MountNode{Client: cl, dir: dir, srv: srv, log: log}, nil
}

// Serve waits until ctx ends or the mount goes away (unmounted from
// outside), then unmounts and closes the client (StopMount).
func (m *MountNode) Serve(ctx context.Context) error {
	unmounted := make(chan struct{})
	go func() { m.srv.Wait(); close(unmounted) }()
	select {
	case <-ctx.Done():
	case <-unmounted:
		m.log.Warn("the mount went away (unmounted from outside)", "mount", m.dir)
	}
	return StopMount(m.srv, m.dir, m.Client, m.log)
}
