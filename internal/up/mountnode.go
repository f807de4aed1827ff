package up

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/metrics"
	"tessera/internal/vfs"
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
	return StartMountWith(ctx, MountConfig{Client: cfg, Dir: dir, Debug: debug})
}

// MountConfig is a mount: `tessera mount` runs one, `tessera up` one.
type MountConfig struct {
	Client client.Config
	Dir    string // the mount point
	Debug  bool   // log every FUSE request
	// Metrics, if set, receives the mount's series: its FUSE requests
	// (metrics.FUSE), its meta calls (metrics.MetaAPI, side client_meta)
	// and its client's counters (metrics.Client).
	Metrics *prometheus.Registry
	// Gateway, if set, is asked for fileset directories and files not
	// cached yet (fuse.Options.Gateway).
	Gateway fuse.Gateway
	// ReadOnly mounts read-only (fuse.Options.ReadOnly): the mount's
	// identity may not change the namespace.
	ReadOnly bool
}

// StartMountWith is StartMount with the whole MountConfig.
func StartMountWith(ctx context.Context, mc MountConfig) (*MountNode, error) {
	cfg, dir, debug := mc.Client, mc.Dir, mc.Debug
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := CleanStaleMount(dir, log); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, &MountPointError{Dir: dir, Err: notDir{err}}
	}
	inv := new(vfs.Invalidations)
	fo := fuse.Options{Logger: log, Debug: debug, Gateway: mc.Gateway, ReadOnly: mc.ReadOnly}
	if mc.Metrics != nil {
		cfg.Meta = metrics.MetaAPI(cfg.Meta, metrics.NewMetaCalls(mc.Metrics, metrics.SideClient))
		ops := metrics.NewFUSEOps(mc.Metrics)
		fo.Wrap = func(fs gofuse.RawFileSystem) gofuse.RawFileSystem { return metrics.FUSE(fs, ops) }
	}
	cfg.Sessions = true
	cfg.OnInvalidate = inv.Invalidate
	cl, err := client.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	if mc.Metrics != nil {
		metrics.Client(mc.Metrics, cl)
	}
	fs := fuse.New(cl, fo)
	inv.Subscribe(fs.Invalidate)
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
