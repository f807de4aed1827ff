package up

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/admin"
	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/kv"
	"tessera/internal/meta"
	"tessera/internal/meta/authz"
	"tessera/internal/meta/metarpc"
	"tessera/internal/metrics"
	"tessera/internal/statuspage"
)

// MetaConfig is a meta service process: `tessera meta` runs one, `tessera
// up` runs one inside itself. Both go through StartMeta, so that the two
// cannot drift apart.
type MetaConfig struct {
	// DB is the KV engine and its place.
	DB MetaDB
	// Listen is the address of the RPC service (127.0.0.1:0 when empty).
	Listen string
	// AddrFile, if set, receives the listen address (DIR/meta.addr, read
	// by `tessera status --data DIR`).
	AddrFile string
	// BlockSize of new files (meta.DefaultBlockSize when 0).
	BlockSize uint32
	// DefaultReplicas is the replication factor of a new cluster (used
	// until one is stored); Replicas, when > 0, is stored.
	DefaultReplicas, Replicas int
	// Site is the site this meta process runs in (--site; "" for none):
	// meta.Service.Site and the RPC service's Hello report it.
	Site string
	// Role configures the background work (StartMetaRole).
	Role MetaRole
	// Creds are the process's "meta" credentials: the RPC service's TLS
	// (wired with metarpc's ServeOptions) and the background work's calls
	// to block servers (MetaRole.Creds). Nil: plain TCP and HTTP
	// (--insecure).
	Creds  *auth.Credentials
	Logger *slog.Logger
	// Limits bound what one peer address may hold of the RPC service
	// (metarpc's defaults for zero fields).
	Limits metarpc.PeerLimits
	// Metrics, if set, receives the service's series: its calls
	// (metrics.MetaAPI over the service it serves) and its state
	// (sessions, leases, callbacks, servers, the mover's progress).
	Metrics *prometheus.Registry
	// Cluster names the cluster (--cluster): with Site, the RPC service's
	// Hello answers it (clients check the name and time the call to find
	// the nearest meta), ClusterStatus adds the store's members when it
	// has them (kv.Members), and the status page shows them.
	Cluster string
	// Mux, if set, is the process's HTTP listener (--metrics): the status
	// page is served at / and /status.json on it.
	Mux *http.ServeMux
}

// MetaNode is a running meta service: the engine, the service, the RPC
// listener and the meta role's background work.
type MetaNode struct {
	Svc *meta.Service
	// API is Svc as served: counted in MetaConfig.Metrics when set. An
	// in-process client (tessera up's mount) uses it, so that its calls
	// count as a remote one's do.
	API  meta.API
	Addr string // where the RPC service listens
	// Status is the status page (GET / and /status.json), for the
	// process to mount on its HTTP listener; Errors holds the warnings
	// and errors the meta role logged, which it shows.
	Status *statuspage.Handler
	Errors *statuspage.Ring

	store    kv.Store
	ln       net.Listener
	stopRole func()
	served   sync.WaitGroup
}

// StartMeta opens cfg.DB, reaps what the previous run left, serves the
// meta service on cfg.Listen and starts the meta role (sweeper, mover,
// reclaimer, collector). The caller holds the data directory's lock
// (LockDataDir). Close stops it all.
func StartMeta(ctx context.Context, cfg MetaConfig) (_ *MetaNode, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	n := &MetaNode{Errors: statuspage.NewRing(0)}
	log = slog.New(statuspage.Tee(log.Handler(), n.Errors))
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	existed := cfg.DB.Exists()
	if n.store, err = cfg.DB.Open(); err != nil {
		return nil, err
	}
	switch {
	case cfg.DB.Engine == EngineMem:
		log.Warn("meta database in memory: every file is lost when this process ends", "db", cfg.DB.String())
	case !existed && cfg.DB.Engine != EngineEtcd:
		log.Info("new meta database", "db", cfg.DB.String())
	}
	shared := sharedEngine(cfg.DB)
	n.Svc, err = meta.New(n.store, meta.Options{BlockSize: cfg.BlockSize, Replicas: max(cfg.DefaultReplicas, 1), Site: cfg.Site,
		Shared: shared, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("meta service on %s: %w", cfg.DB, err)
	}
	if cfg.Replicas > 0 {
		if _, err := n.Svc.SetReplicas(ctx, cfg.Replicas); err != nil {
			return nil, err
		}
	}
	// What the RPC serves is authorized call by call (the identity the
	// transport authenticated); n.API, for callers in this process, is
	// not. Both count in the same series.
	n.API = n.Svc
	var served meta.API = authz.Wrap(n.Svc, authz.Options{Log: log})
	if cfg.Metrics != nil {
		calls := metrics.NewMetaCalls(cfg.Metrics, metrics.SideMeta)
		n.API = metrics.MetaAPI(n.Svc, calls)
		served = metrics.MetaAPI(served, calls)
		metrics.Meta(cfg.Metrics, n.Svc)
	}
	if !shared {
		// Over a shared store the reaper's elected leader sweeps.
		startOrphanReaper(ctx, n.Svc, log)
	}
	if n.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("meta service listen on %s: %w", cfg.Listen, err)
	}
	n.Addr = n.ln.Addr().String()
	n.served.Add(1)
	go func() {
		defer n.served.Done()
		metarpc.Serve(n.ln, served, metarpc.ServeOptions{Logger: log, Creds: cfg.Creds, Cluster: n.clusterInfo(cfg),
			MaxStreamsPerPeer: cfg.Limits.Calls, MaxInFlightPerPeer: cfg.Limits.InFlight})
	}()
	if cfg.AddrFile != "" {
		if err := os.WriteFile(cfg.AddrFile, []byte(n.Addr+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", cfg.AddrFile, err)
		}
	}
	n.Status = statuspage.New(statuspage.Config{
		Cluster: &admin.Cluster{Meta: n.Svc, Dial: blockdial.New(cfg.Creds).Admin, Describe: n.describe(cfg)},
		Errors:  n.Errors,
		Logger:  log,
	})
	if cfg.Mux != nil {
		cfg.Mux.Handle("/", n.Status)
	}
	role := cfg.Role
	role.Logger = log
	if role.Creds == nil {
		role.Creds = cfg.Creds
	}
	n.stopRole = StartMetaRole(ctx, n.Svc, role)
	log.Info("meta service", "listen", n.Addr, "db", cfg.DB.String(), "site", cfg.Site)
	return n, nil
}

// Close stops the meta role and the RPC service and closes the engine.
func (n *MetaNode) Close() error {
	if n.stopRole != nil {
		n.stopRole()
	}
	if n.ln != nil {
		n.ln.Close()
		n.served.Wait()
	}
	if n.store != nil {
		return n.store.Close()
	}
	return nil
}

// sharedEngine reports whether other meta processes may share the store
// of db: every engine but the embedded ones, which one process opens at a
// time.
func sharedEngine(db MetaDB) bool {
	switch db.Engine {
	case EnginePebble, EngineBolt, EngineMem:
		return false
	}
	return true
}

// startOrphanReaper reaps the inodes that lost their last name while open
// and were never reaped because the process died. It runs before the
// service listens; an orphan that clients may still hold open (the store
// served sessions before) is spared by the service's restart grace
// (meta.Options.OrphanGrace) and left to meta.ReapLoop.
func startOrphanReaper(ctx context.Context, svc *meta.Service, log *slog.Logger) {
	if n, err := svc.ReapOrphans(ctx); err != nil {
		log.Warn("reaping orphans left by the previous run", "err", err)
	} else if n > 0 {
		log.Info("reaped orphans left by the previous run", "count", n)
	}
}

// MetaProcess is `tessera meta`: a meta service on its own.
type MetaProcess struct {
	MetaConfig
	// DataDir is locked for the process's life (LockDataDir); "" for an
	// engine in memory.
	DataDir string
	// Ready, if set, is called once the service listens.
	Ready func(addr string)
}

// RunMeta runs `tessera meta` until ctx is done: lock, StartMeta, wait.
func RunMeta(ctx context.Context, p MetaProcess) error {
	if p.DataDir != "" {
		release, err := LockDataDir(p.DataDir)
		if err != nil {
			return err
		}
		defer release()
		if p.AddrFile == "" {
			p.AddrFile = filepath.Join(p.DataDir, "meta.addr")
		}
	}
	n, err := StartMeta(ctx, p.MetaConfig)
	if err != nil {
		return err
	}
	defer n.Close()
	if p.Ready != nil {
		p.Ready(n.Addr)
	}
	<-ctx.Done()
	return nil
}
