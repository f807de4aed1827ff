// Package up composes Tessera's roles into processes. StartMeta (the meta
// service on its KV engine, the orphan reaper, the RPC service and the meta
// role's background work), StartBlockServer (a store, its HTTP service,
// heartbeats and scrub) and StartMount (a client with its meta session and
// its FUSE mount) are the only places those roles are put together:
// `tessera meta` (RunMeta), `tessera blockd` (StartBlockServer), `tessera
// mount` (StartMount) and the all-in-one `tessera up` (Run) all go through
// them, and so do the test
// clusters, which run those commands, so that the roles cannot drift apart.
// Each config takes an optional Prometheus registry (Metrics): set, the
// role registers its series there (internal/metrics); the caller serves it.
//
// StartMeta also builds the meta role's status page (MetaNode.Status,
// package statuspage) and tees the role's warnings and errors into the
// ring it shows (MetaNode.Errors); the process mounts the page on its HTTP
// listener.
//
// Run is `tessera up`: a meta service, N block servers (each on its own
// loopback port and data directory, speaking HTTP like remote ones) and a
// FUSE mount. The mount talks to the meta service in-process and to the
// block servers through memory. Stopping (context cancelled) unmounts,
// commits what the mount buffered and closes everything; starting again on
// the same data directory brings every file back.
//
// Data directory layout:
//
//	DIR/tessera.lock   flock'd by the process running on DIR (LockDataDir)
//	DIR/meta/          the meta service's KV engine (Pebble; see MetaDB)
//	DIR/meta.addr      where the meta service listens (read by status, gc, fsck)
//	DIR/blocks/bN/     block server N's store
//	DIR/cache/         the mount's local disk block cache
//	DIR/tls/           the CA and certificates of its processes (TLSDir)
//	DIR/tessera-s3-admin-*/  the S3 endpoint's private admin socket (up --s3)
//
// A second process on a data directory (a second `tessera up`, or `tessera
// meta` on the directory of a running `up`) is refused with an error that
// names the process holding it. `tessera meta --data DIR` finds the
// database `tessera up --data DIR` made (MetaDBForDataDir).
package up

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/kv/pebblekv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	"tessera/internal/nfs"
	"tessera/internal/s3"
)

// Config is what `tessera up` takes from its flags.
type Config struct {
	DataDir      string
	Mount        string
	BlockServers int
	// Gateways is how many fileset gateways run in the process (issue
	// 14; gateways.go); 0: none, and fileset inodes not cached yet are
	// served as they are.
	Gateways int
	// NewGateway makes each gateway (needed when Gateways > 0). When
	// what it returns is a GatewayCounter, each gateway heartbeats its
	// counters to the registry as up-gateway-I (meta.GatewayInProcess),
	// for fileset status.
	NewGateway GatewayFunc
	// RemoteGateways, when set and Gateways is 0, is what the mount asks
	// instead: the cluster's gateway processes (`tessera gateway`), over
	// the meta service's registry, dialed with the mount's credentials.
	RemoteGateways RemoteGatewayFunc
	BlockSize      uint32
	MetaListen     string // default 127.0.0.1:0
	// Replicas, when set, is stored as the cluster's default replication
	// factor; otherwise the stored one stays, or 2 (1 with a single block
	// server) on a new cluster.
	Replicas int
	// Heartbeat is how often the block servers re-register
	// (meta.DefaultHeartbeat when 0).
	Heartbeat time.Duration
	// MetaDB is the meta service's engine (zero: Pebble in DataDir/meta).
	MetaDB MetaDB
	// ScrubRate and ScrubInterval configure every block server's scrub
	// (BlockServerConfig).
	ScrubRate     int64
	ScrubInterval time.Duration
	// WriteCache is every block server's page-cache window
	// (BlockServerConfig.WriteCache).
	WriteCache int64
	// BlockLimits bound every block server's connections and in-flight
	// bytes (blockserver.DefaultLimits for zero fields).
	BlockLimits blockserver.Limits
	// MetaLimits bound what one peer address may hold of the meta
	// service (MetaConfig.Limits).
	MetaLimits metarpc.PeerLimits
	// Role configures the sweeper and the mover.
	Role  MetaRole
	Debug bool
	// Policy is the mount's default consistency policy (a preset name;
	// "" means policy.Default), for files with none of their own.
	Policy string
	// MemCache and DirtyBytes bound the mount's memory (client.Config's
	// MemCacheBytes and DirtyBytes; 0: sized from the machine).
	MemCache, DirtyBytes int64
	// MetaTimeout is how long the mount's meta calls wait for the meta
	// service (client.Config.MetaTimeout).
	MetaTimeout time.Duration
	// NFS, when set, is the HOST:PORT of an NFS server (NFSv3 and
	// MOUNT) beside the mount, over a client of its own (nfsnode.go);
	// NFSOptions are its export, squash, allow and read-only settings.
	// OnNFS is told the address it listens on, before Ready.
	NFS        string
	NFSOptions nfs.Config
	OnNFS      func(addr string)
	// S3, when set, is the HOST:PORT of an S3 endpoint (plain HTTP: the
	// caller checked it is a loopback address) beside the mount, over a
	// client of its own (s3node.go); OnS3 is told its address before
	// Ready.
	S3   string
	OnS3 func(addr string)
	// Insecure runs every port without TLS (`tessera up --insecure`);
	// otherwise Run makes and uses the CA and certificates in
	// TLSDir(DataDir) (EnsureLocalTLS).
	Insecure bool
	Logger   *slog.Logger
	// Metrics, if set, receives every role's series: the meta service's,
	// each block server's (labelled server=bI) and the mount's.
	Metrics *prometheus.Registry
	// Mux, if set, is the process's HTTP listener: the meta role's status
	// page goes on it (MetaConfig.Mux).
	Mux *http.ServeMux
	// Site, when set, is the site of the whole node: its meta service,
	// block servers and mount (--site).
	Site string
	// Ready, if set, is called once the mount is usable.
	Ready func(mount, metaAddr string)
}

// Run brings everything up and blocks until ctx is done, then tears down.
// It is the composition of the roles the separate commands run: the data
// directory's lock, StartMeta, StartBlockServer for each block server, and
// the mount.
func Run(ctx context.Context, cfg Config) (err error) {
	log := cfg.Logger
	if cfg.BlockServers < 1 {
		return fmt.Errorf("--block-servers must be at least 1, got %d", cfg.BlockServers)
	}
	if cfg.Replicas > cfg.BlockServers {
		return fmt.Errorf("--replicas %d is more than the %d block servers (--block-servers): every block would stay under-replicated", cfg.Replicas, cfg.BlockServers)
	}
	if cfg.MetaListen == "" {
		cfg.MetaListen = "127.0.0.1:0"
	}
	db := cfg.MetaDB
	if db.Engine == "" {
		db = MetaDB{Engine: EnginePebble, Path: filepath.Join(cfg.DataDir, "meta")}
	}
	release, err := LockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer release()
	if d := db.DataDir(); d != "" && filepath.Clean(d) != filepath.Clean(cfg.DataDir) {
		releaseDB, err := LockDataDir(d)
		if err != nil {
			return err
		}
		defer releaseDB()
	}
	if err := CleanStaleMount(cfg.Mount, log); err != nil {
		return err
	}
	lt := &LocalTLS{Blocks: make([]*auth.Credentials, cfg.BlockServers)}
	if !cfg.Insecure {
		host, _, _ := net.SplitHostPort(cfg.MetaListen)
		if lt, err = EnsureLocalTLS(cfg.DataDir, cfg.BlockServers, host); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(cfg.Mount); err != nil || !fi.IsDir() {
		return &MountPointError{Dir: cfg.Mount, Err: notDir{err}}
	}
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	blockDirs := make([]string, cfg.BlockServers)
	for i := range blockDirs {
		blockDirs[i] = filepath.Join(cfg.DataDir, "blocks", fmt.Sprintf("b%d", i))
	}
	shared, err := oneFileSystem(blockDirs)
	if err != nil {
		return err
	}
	// Copies on one file system protect against no disk failure and
	// multiply the writes: one copy, unless the block directories are
	// separate file systems (mounted there by the operator) or --replicas
	// says otherwise.
	defReplicas := 1
	if cfg.BlockServers >= 2 && !shared {
		defReplicas = 2
	}
	mn, err := StartMeta(ctx, MetaConfig{
		DB:              db,
		Listen:          cfg.MetaListen,
		AddrFile:        filepath.Join(cfg.DataDir, "meta.addr"),
		BlockSize:       cfg.BlockSize,
		DefaultReplicas: defReplicas,
		Replicas:        cfg.Replicas,
		Site:            cfg.Site,
		Role:            cfg.Role,
		Creds:           lt.Meta,
		Logger:          log,
		Limits:          cfg.MetaLimits,
		Metrics:         cfg.Metrics,
		Mux:             cfg.Mux,
	})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { mn.Close() })
	svc := mn.Svc
	if m, err := svc.Servers(ctx); err == nil && m.Replicas > 1 && shared {
		log.Info("the block servers share one file system: extra copies protect against no disk failure and multiply the writes; "+
			"--replicas 1 for speed, or block servers on separate disks or machines (tessera blockd) for redundancy",
			"replicas", m.Replicas, "data", cfg.DataDir)
	}
	if m, err := svc.Servers(ctx); err == nil && m.Replicas > cfg.BlockServers {
		log.Warn("the stored replication factor is more than the block servers: every block stays under-replicated; "+
			"give --replicas N (at most --block-servers) or more --block-servers", "replicas", m.Replicas, "block_servers", cfg.BlockServers)
	}

	host, _ := os.Hostname()
	stores := make(map[string]*disk.Store, cfg.BlockServers)
	for i := 0; i < cfg.BlockServers; i++ {
		bn, err := StartBlockServer(ctx, svc, BlockServerConfig{
			ID:            fmt.Sprintf("b%d", i),
			Dir:           blockDirs[i],
			Host:          host,
			Site:          cfg.Site,
			Heartbeat:     cfg.Heartbeat,
			ScrubRate:     cfg.ScrubRate,
			ScrubInterval: cfg.ScrubInterval,
			WriteCache:    cfg.WriteCache,
			Creds:         lt.Blocks[i],
			Limits:        cfg.BlockLimits,
			Logger:        log,
			Metrics:       cfg.Metrics,
		})
		if err != nil {
			return err
		}
		cleanups = append(cleanups, func() { bn.Close() })
		stores[bn.Server.ID] = bn.Store
	}
	metaAddr := mn.Addr

	// The mount reaches this process's block servers through memory (the
	// co-located fast path); servers that join later go over HTTP, with
	// the mount's (client-rw) credentials.
	remote := blockdial.New(lt.Mount)
	dial := func(s meta.Server) (block.Store, error) {
		if st, ok := stores[s.ID]; ok && s.Dir == st.Dir() {
			// The client hashed every block it sends; the store need
			// not hash it again.
			return st.Trusted(), nil
		}
		return remote.Block(s)
	}

	gw, closeGW, err := startGateways(ctx, cfg, svc, dial, lt.Mount, log)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, closeGW)
	// The mount and the front ends beside it (NFS, S3) are clients of
	// this process's meta service and block servers alike.
	clientCfg := client.Config{
		Meta:          mn.API,
		Dial:          dial,
		Logger:        log,
		MemCacheBytes: cfg.MemCache,
		DirtyBytes:    cfg.DirtyBytes,
		MetaTimeout:   cfg.MetaTimeout,
		Policy:        cfg.Policy,
		Site:          cfg.Site,
	}
	mountCfg := clientCfg
	mountCfg.DiskCacheDir = filepath.Join(cfg.DataDir, "cache")
	mnt, err := StartMountWith(ctx, MountConfig{Dir: cfg.Mount, Debug: cfg.Debug, Metrics: cfg.Metrics, Gateway: gw, Client: mountCfg})
	if err != nil {
		return err
	}
	if cfg.NFS != "" {
		o := cfg.NFSOptions
		o.ClusterID = nfs.ClusterID(lt.Mount)
		nn, err := StartNFS(ctx, NFSConfig{Listen: cfg.NFS, Server: o, Client: clientCfg})
		if err != nil {
			_ = StopMount(mnt.srv, mnt.dir, mnt.Client, log)
			return err
		}
		defer nn.Close()
		if cfg.OnNFS != nil {
			cfg.OnNFS(nn.Addr)
		}
	}
	if cfg.S3 != "" {
		sn, err := StartS3(ctx, S3Config{Server: s3.ServerConfig{Listen: cfg.S3, AdminDir: cfg.DataDir}, Client: clientCfg})
		if err != nil {
			_ = StopMount(mnt.srv, mnt.dir, mnt.Client, log)
			return err
		}
		defer sn.Close()
		if cfg.OnS3 != nil {
			cfg.OnS3(sn.Addr)
		}
	}
	if cfg.Ready != nil {
		cfg.Ready(cfg.Mount, metaAddr)
	}
	return mnt.Serve(ctx)
}

// oneFileSystem creates dirs and reports whether they all lie on one file
// system (one device number).
func oneFileSystem(dirs []string) (bool, error) {
	devs := make(map[uint64]bool)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return false, fmt.Errorf("block server directory: %w", err)
		}
		fi, err := os.Stat(d)
		if err != nil {
			return false, fmt.Errorf("block server directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return true, nil
		}
		devs[uint64(st.Dev)] = true
	}
	return len(devs) <= 1, nil
}

// closeTimeout bounds the client's last commits when the mount stops: a
// stop must end even when the block servers cannot take the data (a full
// disk, servers gone).
const closeTimeout = 20 * time.Second

// StopMount unmounts mnt (Unmount) and closes its client, giving the
// client's last commits at most closeTimeout.
func StopMount(srv interface{ Unmount() error }, mnt string, cl *client.Client, log *slog.Logger) error {
	uerr := Unmount(srv, mnt, log)
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return errors.Join(uerr, cl.Close(ctx))
}

// Unmount unmounts, retrying while the mount is busy, and detaching lazily
// as the last resort so that the process never leaves a dead mount behind.
func Unmount(srv interface{ Unmount() error }, mnt string, log *slog.Logger) error {
	var err error
	for i := 0; i < 10; i++ {
		if err = srv.Unmount(); err == nil || !mounted(mnt) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	log.Warn("mount busy; detaching it", "mount", mnt, "err", err)
	if derr := syscall.Unmount(mnt, syscall.MNT_DETACH); derr != nil {
		return fmt.Errorf("unmount %s: %w", mnt, errors.Join(err, derr))
	}
	return nil
}

// mounted reports whether dir is a mount point in /proc/mounts.
func mounted(dir string) bool {
	data, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return false
	}
	abs, _ := filepath.Abs(dir)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && unescapeMount(f[1]) == abs {
			return true
		}
	}
	return false
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// CleanStaleMount detaches a FUSE mount at dir whose server is gone (a
// previous run killed with -9): such a mount answers ENOTCONN. statfs is the
// probe because the kernel always asks the daemon for it, while a stat of the
// mount point may be answered from cached attributes.
func CleanStaleMount(dir string, log *slog.Logger) error {
	if !mounted(dir) {
		return nil
	}
	var st syscall.Statfs_t
	err := syscall.Statfs(dir, &st)
	if err == nil {
		return &MountPointError{Dir: dir, Err: ErrMountBusy}
	}
	if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		return fmt.Errorf("mount point %s: %w", dir, err)
	}
	log.Warn("detaching a stale mount left by a previous run", "mount", dir)
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detach stale mount %s: %w", dir, err)
	}
	return nil
}

// MetaStoreOptions is how the meta role opens its Pebble store: updates
// share fsyncs, and they are acknowledged once written to the WAL file (a
// crash of the process loses none), made durable by the fsyncs of clients
// (meta.API.Sync) or within MetaSyncEvery
// (docs/design/2026-11-23-small-files.md); its block cache is
// MetaCacheBytes.
func MetaStoreOptions() pebblekv.Options {
	return pebblekv.Options{PipelinedSync: true, WALSyncEvery: MetaSyncEvery, CacheBytes: MetaCacheBytes}
}

// MetaCacheBytes is the meta store's block cache: Pebble's default, 8 MiB,
// stated as a part of tessera up's memory bound. 32 MiB saved 15-36% of the
// daemon's CPU on a source tree's untar, tar -d and rm -rf, but raised the
// tree job's peak from 98 to 143 MiB (0.71x JuiceFS's, over issue 23's
// 0.5x contract): memory wins until the rest of the peak makes room
// (docs/design/2026-11-29-meta-cache.md).
const MetaCacheBytes = 8 << 20

// MetaSyncEvery bounds what a crash of the meta service's machine may lose
// of the changes no client synced: ext4 commits its journal every 5 s.
const MetaSyncEvery = time.Second
