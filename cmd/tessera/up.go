package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"tessera/internal/auth"
	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/gateway/gwrpc"
	"tessera/internal/memtrim"
	"tessera/internal/meta"
	"tessera/internal/up"
)

func runUp(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	data := fs.String("data", "", "data directory `DIR` (meta database, blocks, cache); required")
	mnt := fs.String("mount", "", "mount point `DIR` (an existing directory); required")
	n := fs.Int("block-servers", 3, "number of block servers to run")
	gateways := fs.Int("gateways", 1, "number of fileset gateways to run in this process, which fetch what a fileset (tessera fileset) has not cached; 0: none, the cluster's gateway processes (tessera gateway) are asked instead")
	bs := fs.Uint("block-size", 0, "block size of new files in bytes (default 4 MiB)")
	metaListen := fs.String("meta-listen", "127.0.0.1:0", "address the meta service listens on")
	replicas := fs.Int("replicas", 0, "the cluster's default replication factor (default 1: the block servers share the data directory's file system; 2 when their directories are separate file systems)")
	dbURL := addMetaDBFlag(fs)
	sf := addScrubFlags(fs)
	pc := addPageCacheFlag(fs)
	lf := addLimitFlags(fs)
	setUpInFlight(fs)
	mlf := addMetaLimitFlags(fs)
	role := addMetaRoleFlags(fs)
	heartbeat := fs.Duration("heartbeat", meta.DefaultHeartbeat, "how often the block servers re-register")
	debug := fs.Bool("debug", false, "log every FUSE request")
	pol := addPolicyFlag(fs)
	mem := addUpMemFlags(fs)
	pprofAddr := addPprofFlag(fs)
	metaTimeout := addMetaTimeoutFlag(fs)
	siteF := addSiteFlag(fs, "the site of this node: its meta service, block servers and mount")
	insecure := fs.Bool("insecure", false, "plain TCP without authentication (every caller trusted as an admin); --meta-listen must then be a loopback address. "+
		"Without it up makes a CA and certificates in DIR/tls/ on first start and uses them")
	metricsAddr := addMetricsFlag(fs)
	nfsListen := fs.String("nfs", "", "also serve the cluster over NFS on HOST:PORT (tessera nfs; --export, --squash, --allow apply). "+nfsHelp)
	nf := addNFSFlags(fs, "", upSquashHelp)
	s3Listen := fs.String("s3", "", "also serve the cluster over S3 on HOST:PORT (tessera s3; keys from tessera s3 keys add NAME --data DIR). "+s3Help)
	memParts := func() []memPart {
		lim, _ := lf.limits()
		mlim, _ := mlf.limits()
		mc := client.Config{MemCacheBytes: *mem.cache, DirtyBytes: *mem.dirty}
		parts := upMemParts(mc, *n, lim, mlim)
		if *nfsListen != "" {
			parts = append(parts, nfsMemParts(mc, "nfs server: ")...)
		}
		if *s3Listen != "" {
			parts = append(parts, s3MemParts(mc, "s3 endpoint: ")...)
		}
		return parts
	}
	if err := parse(fs, args); err != nil {
		return helpMem(err, memParts)
	}
	nfsCfg, err := nf.config(*nfsListen)
	if err != nil {
		return err
	}
	var nfsAddr, s3Addr string
	if *s3Listen != "" {
		// The all-in-one setup serves S3 over plain HTTP on a loopback
		// address; HTTPS is tessera s3's, with --tls-cert/--tls-key.
		if err := s3Plain(*s3Listen, false); err != nil {
			return fmt.Errorf("%w (tessera up serves S3 over plain HTTP on a loopback address only; run tessera s3 with --tls-cert/--tls-key for HTTPS)", err)
		}
	}
	if *insecure {
		if err := loopbackOnly(*metaListen); err != nil {
			return err
		}
	}
	waitMeta, err := metaTimeout.value()
	if err != nil {
		return err
	}
	site, err := siteF.value()
	if err != nil {
		return err
	}
	if err := servePprof(*pprofAddr); err != nil {
		return err
	}
	if err := mem.check(); err != nil {
		return err
	}
	if *data == "" || *mnt == "" {
		return fmt.Errorf("%w: --data and --mount are required (see tessera up -h)", errUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (see tessera up -h)", errUsage, fs.Arg(0))
	}
	if *bs != 0 && (*bs < 64<<10 || *bs > 64<<20 || *bs&(*bs-1) != 0) {
		return fmt.Errorf("%w: --block-size %d: want a power of two from 64 KiB to 64 MiB", errUsage, *bs)
	}
	if *replicas < 0 || *replicas > meta.MaxReplicas {
		return fmt.Errorf("%w: --replicas %d: want 1 to %d", errUsage, *replicas, meta.MaxReplicas)
	}
	if err := sf.check(); err != nil {
		return err
	}
	writeCache, err := pc.config()
	if err != nil {
		return err
	}
	limits, err := lf.limits()
	if err != nil {
		return err
	}
	metaLimits, err := mlf.limits()
	if err != nil {
		return err
	}
	rc, err := role.config()
	if err != nil {
		return err
	}
	var db up.MetaDB
	if *dbURL != "" {
		if db, err = metaDB(*dbURL, *data); err != nil {
			return err
		}
	}
	if *replicas > *n {
		return fmt.Errorf("%w: --replicas %d is more than the %d block servers (--block-servers): every block would stay under-replicated", errUsage, *replicas, *n)
	}
	log := newLogger(false)
	parts := memParts()
	limitMemory(memTotal(parts))
	defer memtrim.GrowthFloor(upGCPercent, upGCFloor)()
	log.Info("memory bound", "total_mib", memTotal(parts)>>20, "parts", memBoundLine(parts))
	mf, err := startMetrics(*metricsAddr, log)
	if err != nil {
		return err
	}
	defer mf.Close()
	// Recorded before the mount appears, so that an admin command given a
	// path on it finds the cluster as soon as it can see the mount.
	if unregister, err := registerMount(*mnt, *data); err != nil {
		log.Warn("cannot record the mount for admin commands given a path on it (they need --data)", "err", err)
	} else {
		defer unregister()
	}
	return up.Run(ctx, up.Config{
		Metrics:       mf.reg,
		Mux:           mf.mux(),
		MetaDB:        db,
		ScrubRate:     *sf.rate,
		ScrubInterval: *sf.interval,
		WriteCache:    writeCache,
		BlockLimits:   limits,
		MetaLimits:    metaLimits,
		Replicas:      *replicas,
		Heartbeat:     *heartbeat,
		Role:          rc,
		DataDir:       *data,
		Mount:         *mnt,
		BlockServers:  *n,
		Gateways:      *gateways,
		NewGateway:    newGateway,
		RemoteGateways: func(m meta.GatewaysAPI, creds *auth.Credentials) fuse.Gateway {
			r := gwrpc.NewRouter(m, creds, slog.Default())
			r.Optional = true // no gateway process: fileset inodes as they are, as before
			return r
		},
		BlockSize:   uint32(*bs),
		MetaListen:  *metaListen,
		Debug:       *debug,
		Policy:      pol.String(),
		MemCache:    *mem.cache,
		DirtyBytes:  *mem.dirty,
		MetaTimeout: waitMeta,
		Site:        site,
		Insecure:    *insecure,
		Logger:      log,
		NFS:         *nfsListen,
		NFSOptions:  nfsCfg,
		OnNFS:       func(addr string) { nfsAddr = " nfs=" + addr },
		S3:          *s3Listen,
		OnS3:        func(addr string) { s3Addr = " s3=" + addr },
		Ready: func(mount, metaAddr string) {
			fmt.Printf("tessera up: ready mount=%s meta=%s data=%s%s%s\n", mount, metaAddr, *data, nfsAddr+s3Addr, mf.ready())
		},
	})
}
