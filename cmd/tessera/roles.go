package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/kv/pebblekv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	"tessera/internal/up"
)

func runMeta(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("meta", flag.ContinueOnError)
	data := fs.String("data", "", "directory of the embedded KV engine; required")
	listen := fs.String("listen", "127.0.0.1:7400", "address to listen on")
	bs := fs.Uint("block-size", 0, "block size of new files in bytes (default 4 MiB)")
	replicas := fs.Int("replicas", 2, "the cluster's default replication factor (stored when given)")
	role := addMetaRoleFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *data == "" {
		return fmt.Errorf("%w: --data is required (see tessera meta -h)", errUsage)
	}
	if *replicas < 1 || *replicas > meta.MaxReplicas {
		return fmt.Errorf("%w: --replicas %d: want 1 to %d", errUsage, *replicas, meta.MaxReplicas)
	}
	rc, err := role.config()
	if err != nil {
		return err
	}
	log := newLogger(false)
	if err := os.MkdirAll(*data, 0o755); err != nil {
		return fmt.Errorf("data directory %s: %w", *data, err)
	}
	store, err := pebblekv.Open(filepath.Join(*data, "meta"), up.MetaStoreOptions())
	if err != nil {
		return err
	}
	defer store.Close()
	svc, err := meta.New(store, meta.Options{BlockSize: uint32(*bs), Replicas: *replicas})
	if err != nil {
		return err
	}
	if flagGiven(fs, "replicas") {
		if _, err := svc.SetReplicas(ctx, *replicas); err != nil {
			return err
		}
	}
	rc.Logger = log
	stopRole := up.StartMetaRole(ctx, svc, rc)
	defer stopRole()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	log.Info("meta service", "listen", ln.Addr().String(), "data", *data)
	fmt.Printf("tessera meta: ready listen=%s\n", ln.Addr())
	go func() { <-ctx.Done(); ln.Close() }()
	err = metarpc.Serve(ln, svc, log)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func runBlockd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("blockd", flag.ContinueOnError)
	data := fs.String("data", "", "block directory; required")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	metaAddr := fs.String("meta", "", "meta service to register with (host:port); required")
	id := fs.String("id", "", "stable server id (default: derived from the listen address)")
	host := fs.String("host", "", "failure domain: host (default: this host name)")
	rack := fs.String("rack", "", "failure domain: rack")
	site := fs.String("site", "", "failure domain: site")
	heartbeat := fs.Duration("heartbeat", meta.DefaultHeartbeat, "re-register with the meta service this often")
	pprofAddr := addPprofFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := servePprof(*pprofAddr); err != nil {
		return err
	}
	if *data == "" || *metaAddr == "" {
		return fmt.Errorf("%w: --data and --meta are required (see tessera blockd -h)", errUsage)
	}
	log := newLogger(false)
	st, err := disk.Open(*data)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	addr := ln.Addr().String()
	if *id == "" {
		*id = "b-" + addr
	}
	if *host == "" {
		*host, _ = os.Hostname()
	}
	mc, err := metarpc.Dial(*metaAddr)
	if err != nil {
		return err
	}
	defer mc.Close()
	if *heartbeat <= 0 {
		return fmt.Errorf("%w: --heartbeat %v must be positive", errUsage, *heartbeat)
	}
	me := meta.Server{ID: *id, Addr: addr, Dir: *data, Host: *host, Rack: *rack, Site: *site}
	if _, err := mc.RegisterServer(ctx, me); err != nil {
		return fmt.Errorf("register with %s: %w", *metaAddr, err)
	}
	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); meta.Heartbeat(hbCtx, mc, me, *heartbeat, log) }()
	defer func() { stopHeartbeat(); <-hbDone }()
	srv := blockserver.NewHTTPServer(addr, blockserver.New(st, blockserver.Options{Logger: log}), log)
	log.Info("block server", "id", *id, "listen", addr, "data", *data)
	fmt.Printf("tessera blockd: ready id=%s listen=%s\n", *id, addr)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
		return err
	}
	return nil
}

func runMount(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	metaAddr := fs.String("meta", "", "meta service (host:port); required")
	cacheDir := fs.String("cache-dir", "", "local disk block cache directory (default: none)")
	cacheSize := fs.Int64("cache-size", 1<<30, "local disk block cache size in bytes")
	mem := addMemFlags(fs)
	cacheTier := fs.String("cache-tier", "", "shared memcached tier for blocks, memcached://host:port,host:port")
	debug := fs.Bool("debug", false, "log every FUSE request")
	pprofAddr := addPprofFlag(fs)
	pol := addPolicyFlag(fs)
	metaTimeout := addMetaTimeoutFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := mem.check(); err != nil {
		return err
	}
	waitMeta, err := metaTimeout.value()
	if err != nil {
		return err
	}
	if err := servePprof(*pprofAddr); err != nil {
		return err
	}
	if *metaAddr == "" || fs.NArg() != 1 {
		return fmt.Errorf("%w: want --meta ADDR and one mount point (see tessera mount -h)", errUsage)
	}
	mnt := fs.Arg(0)
	log := newLogger(false)
	if err := up.CleanStaleMount(mnt, log); err != nil {
		return err
	}
	mc, err := metarpc.Dial(*metaAddr)
	if err != nil {
		return err
	}
	defer mc.Close()
	inv := new(fuse.Invalidator)
	cl, err := client.New(ctx, client.Config{Meta: mc, Dial: up.DialBlockServer, Logger: log,
		DiskCacheDir: *cacheDir, DiskCacheBytes: *cacheSize, CacheTier: *cacheTier, Policy: pol.String(),
		MemCacheBytes: *mem.cache, DirtyBytes: *mem.dirty, MetaTimeout: waitMeta,
		Sessions: true, OnInvalidate: inv.Invalidate})
	if err != nil {
		return err
	}
	fsys := fuse.New(cl, fuse.Options{Logger: log, Debug: *debug})
	inv.Set(fsys)
	srv, err := fuse.Mount(fsys, mnt)
	if err != nil {
		cl.Close(context.Background())
		return err
	}
	fmt.Printf("tessera mount: ready mount=%s meta=%s\n", mnt, *metaAddr)
	unmounted := make(chan struct{})
	go func() { srv.Wait(); close(unmounted) }()
	select {
	case <-ctx.Done():
	case <-unmounted:
	}
	err = up.StopMount(srv, mnt, cl, log)
	st := cl.Stats()
	log.Info("mount: stats", "commits", st.Commits, "conflicts", st.Conflicts,
		"redo_retries", st.RedoRetries, "commits_failed", st.CommitsFailed, "callbacks", st.Callbacks, "tier_block_hits", st.TierHits, "tier_stat_hits", st.AttrHits, "tier_stat_misses", st.AttrMisses)
	return err
}
