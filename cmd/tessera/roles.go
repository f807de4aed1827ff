package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/clusters"
	"tessera/internal/gateway/gwrpc"
	"tessera/internal/meta"
	"tessera/internal/up"
)

func runMeta(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("meta", flag.ContinueOnError)
	data := fs.String("data", "", "data directory `DIR`: the database is DIR/meta (where tessera up --data DIR keeps it; DIR may also be the database itself); this or --meta-db is required")
	dbURL := addMetaDBFlag(fs)
	listen := fs.String("listen", "127.0.0.1:7400", "address `ADDR` to listen on")
	bs := fs.Uint("block-size", 0, "block size of new files in bytes (default 4 MiB)")
	replicas := fs.Int("replicas", 2, "the cluster's default replication factor (stored when given)")
	cluster := fs.String("cluster", "", "the cluster's name: shown by tessera status, checked by mounts of NAME:/dir and by clients given it")
	siteF := addSiteFlag(fs, "the site this meta service runs in (mounts of the site use it; clients are told it; docs/replication.md)")
	role := addMetaRoleFlags(fs)
	tf := addTLSFlags(fs)
	metricsAddr := addMetricsFlag(fs)
	mlf := addMetaLimitFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (see tessera meta -h)", errUsage, fs.Arg(0))
	}
	metaLimits, err := mlf.limits()
	if err != nil {
		return err
	}
	switch {
	case *data == "" && *dbURL == "":
		return fmt.Errorf("%w: --data DIR or --meta-db URL is required (see tessera meta -h)", errUsage)
	case *data != "" && *dbURL != "":
		return fmt.Errorf("%w: give --data DIR or --meta-db URL, not both (--data DIR means --meta-db pebble:DIR/meta)", errUsage)
	}
	if *cluster != "" {
		if err := clusters.CheckName(*cluster); err != nil {
			return fmt.Errorf("%w: --cluster: %v", errUsage, err)
		}
	}
	if *replicas < 1 || *replicas > meta.MaxReplicas {
		return fmt.Errorf("%w: --replicas %d: want 1 to %d", errUsage, *replicas, meta.MaxReplicas)
	}
	site, err := siteF.value()
	if err != nil {
		return err
	}
	rc, err := role.config()
	if err != nil {
		return err
	}
	db, err := metaDB(*dbURL, *data)
	if err != nil {
		return err
	}
	log := newLogger(false)
	mf, err := startMetrics(*metricsAddr, log)
	if err != nil {
		return err
	}
	defer mf.Close()
	creds, err := tf.role("meta", up.MetaCertName, []auth.Role{auth.RoleMeta}, *listen)
	if err != nil {
		return err
	}
	p := up.MetaProcess{
		MetaConfig: up.MetaConfig{DB: db, Listen: *listen, BlockSize: uint32(*bs), DefaultReplicas: *replicas,
			Site: site, Role: rc, Creds: creds, Logger: log, Limits: metaLimits, Metrics: mf.reg, Mux: mf.mux(), Cluster: *cluster},
		DataDir: db.DataDir(),
		Ready:   func(addr string) { fmt.Printf("tessera meta: ready listen=%s%s\n", addr, mf.ready()) },
	}
	if flagGiven(fs, "replicas") {
		p.Replicas = *replicas
	}
	return up.RunMeta(ctx, p)
}

func runBlockd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("blockd", flag.ContinueOnError)
	data := fs.String("data", "", "block directory `DIR`; required")
	listen := fs.String("listen", "127.0.0.1:0", "address `ADDR` to listen on")
	ma := addMetaAddrFlags(fs, "meta service to register with; required. "+metaFlagUsage)
	id := fs.String("id", "", "stable server `ID` (default: derived from the listen address)")
	host := fs.String("host", "", "failure domain: host (default: this host name)")
	rack := fs.String("rack", "", "failure domain: rack")
	siteF := addSiteFlag(fs, "failure domain: site (replicas per site: docs/replication.md)")
	heartbeat := fs.Duration("heartbeat", meta.DefaultHeartbeat, "re-register with the meta service this often")
	sf := addScrubFlags(fs)
	pc := addPageCacheFlag(fs)
	lf := addLimitFlags(fs)
	pprofAddr := addPprofFlag(fs)
	tf := addTLSFlags(fs)
	metricsAddr := addMetricsFlag(fs)
	if err := parse(fs, args); err != nil {
		return helpMem(err, func() []memPart {
			lim, _ := lf.limits()
			return blockdMemParts(lim)
		})
	}
	if lim, err := lf.limits(); err == nil {
		limitMemory(memTotal(blockdMemParts(lim)))
	}
	site, err := siteF.value()
	if err != nil {
		return err
	}
	limits, err := lf.limits()
	if err != nil {
		return err
	}
	if *data == "" || *ma.meta == "" {
		return fmt.Errorf("%w: --data and --meta are required (see tessera blockd -h)", errUsage)
	}
	creds, err := tf.role("blockd", *id, []auth.Role{auth.RoleBlockd}, *listen)
	if err != nil {
		return err
	}
	if err := servePprof(*pprofAddr); err != nil {
		return err
	}
	if *heartbeat <= 0 {
		return fmt.Errorf("%w: --heartbeat %v must be positive", errUsage, *heartbeat)
	}
	if err := sf.check(); err != nil {
		return err
	}
	writeCache, err := pc.config()
	if err != nil {
		return err
	}
	if *host == "" {
		*host, _ = os.Hostname()
	}
	log := newLogger(false)
	mf, err := startMetrics(*metricsAddr, log)
	if err != nil {
		return err
	}
	defer mf.Close()
	t, err := ma.resolve(ctx, "")
	if err != nil {
		return err
	}
	mc, err := t.dial(ctx, creds, log)
	if err != nil {
		return err
	}
	defer mc.Close()
	bn, err := up.StartBlockServer(ctx, mc, up.BlockServerConfig{
		ID: *id, Dir: *data, Listen: *listen, Host: *host, Rack: *rack, Site: site,
		Heartbeat: *heartbeat, ScrubRate: *sf.rate, ScrubInterval: *sf.interval, WriteCache: writeCache, Limits: limits, Creds: creds, Logger: log, Metrics: mf.reg,
	})
	if err != nil {
		return fmt.Errorf("block server with meta service %s: %w", *ma.meta, err)
	}
	defer bn.Close()
	fmt.Printf("tessera blockd: ready id=%s listen=%s%s\n", bn.Server.ID, bn.Server.Addr, mf.ready())
	select {
	case <-ctx.Done():
		return nil
	case err := <-bn.Done():
		if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

func runMount(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	ma := addMetaAddrFlags(fs, metaFlagUsage+"; required unless the source NAME:/dir names the cluster")
	cacheDir := fs.String("cache-dir", "", "local disk block cache directory `DIR` (default: none)")
	cacheSize := fs.Int64("cache-size", 1<<30, "local disk block cache size in bytes")
	mem := addMemFlags(fs)
	cacheTier := fs.String("cache-tier", "", "shared memcached tier for blocks, memcached://host:port,host:port")
	debug := fs.Bool("debug", false, "log every FUSE request")
	pprofAddr := addPprofFlag(fs)
	pol := addPolicyFlag(fs)
	metaTimeout := addMetaTimeoutFlag(fs)
	siteF := addSiteFlag(fs, "the site this mount runs in: blocks are read from its servers first, then from the nearest site")
	tf := addTLSFlags(fs)
	metricsAddr := addMetricsFlag(fs)
	if err := parse(fs, args); err != nil {
		return helpMem(err, func() []memPart {
			return mountMemParts(client.Config{MemCacheBytes: *mem.cache, DirtyBytes: *mem.dirty})
		})
	}
	if err := mem.check(); err != nil {
		return err
	}
	limitMemory(memTotal(mountMemParts(client.Config{MemCacheBytes: *mem.cache, DirtyBytes: *mem.dirty})))
	site, err := siteF.value()
	if err != nil {
		return err
	}
	waitMeta, err := metaTimeout.value()
	if err != nil {
		return err
	}
	if err := servePprof(*pprofAddr); err != nil {
		return err
	}
	src, err := mountSource(fs.Args())
	if err != nil {
		return err
	}
	t, err := ma.resolve(ctx, src.cluster)
	if err != nil {
		return err
	}
	if len(t.addrs) == 0 {
		return fmt.Errorf("%w: want --meta ADDR[,ADDR...] or a source NAME:/dir, and a mount point (see tessera mount -h)", errUsage)
	}
	mnt := src.mnt
	creds, err := tf.role("mount", up.MountCertName, []auth.Role{auth.RoleClientRW, auth.RoleClientRO, auth.RoleAdmin})
	if err != nil {
		return err
	}
	log := newLogger(false)
	mf, err := startMetrics(*metricsAddr, log)
	if err != nil {
		return err
	}
	defer mf.Close()
	mc, err := t.dial(ctx, creds, log)
	if err != nil {
		return err
	}
	defer mc.Close()
	api, err := mountRoot(ctx, mc, src.dir)
	if err != nil {
		return err
	}
	// Fileset inodes not cached yet go to the cluster's gateway processes
	// (tessera gateway); with none live, reading them fails naming that.
	router := gwrpc.NewRouter(mc, creds, log)
	defer router.Close()
	// An identity that may not change the namespace (client-ro) mounts
	// read-only: writes fail at open, not at the commit after write(2).
	readOnly := creds != nil && creds.HasCert() && !creds.Identity.Role.Can(auth.WriteNamespace)
	node, err := up.StartMountWith(ctx, up.MountConfig{Dir: mnt, Debug: *debug, Metrics: mf.reg, Gateway: router, ReadOnly: readOnly, Client: client.Config{
		Meta: api, Dial: blockdial.New(creds).Block, Logger: log,
		DiskCacheDir: *cacheDir, DiskCacheBytes: *cacheSize, CacheTier: *cacheTier, Policy: pol.String(),
		MemCacheBytes: *mem.cache, DirtyBytes: *mem.dirty, MetaTimeout: waitMeta, Site: site}})
	if err != nil {
		return err
	}
	if readOnly {
		log.Info("mount: read-only, the identity may only read", "identity", creds.Identity.Name, "role", string(creds.Identity.Role))
	}
	fmt.Printf("tessera mount: ready mount=%s meta=%s%s%s\n", mnt, mc.Addr(), src.ready(), mf.ready())
	err = node.Serve(ctx)
	cl := node.Client
	st := cl.Stats()
	log.Info("mount: stats", "commits", st.Commits, "conflicts", st.Conflicts,
		"redo_retries", st.RedoRetries, "commits_failed", st.CommitsFailed, "callbacks", st.Callbacks, "tier_block_hits", st.TierHits, "tier_stat_hits", st.AttrHits, "tier_stat_misses", st.AttrMisses)
	return err
}
