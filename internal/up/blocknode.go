package up

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/auth"
	"tessera/internal/block/disk"
	"tessera/internal/block/scrub"
	blockserver "tessera/internal/block/server"
	"tessera/internal/meta"
	"tessera/internal/metrics"
)

// Registry is what a block server needs of the meta service: to register
// and to send heartbeats (*meta.Service in process, the RPC client of
// `tessera blockd`).
type Registry = meta.API

// BlockServerConfig is one block server: `tessera blockd` runs one,
// `tessera up` runs N, both through StartBlockServer.
type BlockServerConfig struct {
	ID     string // stable id (default: "b-" + the listen address)
	Dir    string // the store's directory
	Listen string // 127.0.0.1:0 when empty
	// Host, Rack and Site are the server's failure domain.
	Host, Rack, Site string
	// Heartbeat is how often the server re-registers
	// (meta.DefaultHeartbeat when 0).
	Heartbeat time.Duration
	// ScrubRate is the background scrub's pace in bytes per second (0: no
	// scrub; negative: unlimited); ScrubInterval the least time between
	// its rounds (scrub.DefaultInterval when 0).
	ScrubRate     int64
	ScrubInterval time.Duration
	// WriteCache is how many bytes of the blocks it wrote last the store
	// leaves in the page cache (disk.Store.SetWriteCache):
	// disk.DefaultWriteCache when 0, none when negative.
	WriteCache int64
	// Limits bound connections, in-flight bytes and timeouts
	// (blockserver.DefaultLimits for zero fields).
	Limits blockserver.Limits
	// Creds are the server's "blockd" credentials: it serves TLS with them
	// and requires an identity on every route (package server), and they
	// are what it registers with (metarpc's DialOptions). Nil: plain HTTP,
	// every caller trusted (--insecure).
	Creds  *auth.Credentials
	Logger *slog.Logger
	// Metrics, if set, receives the server's series (its HTTP requests
	// and bytes, its store's use, its scrub's progress), labelled
	// server=ID so that the N servers of tessera up share a registry.
	Metrics *prometheus.Registry
}

// BlockServerNode is a running block server: its store, HTTP service,
// heartbeats and scrub.
type BlockServerNode struct {
	Server meta.Server // as registered
	Store  *disk.Store
	Scrub  *scrub.Scrubber // nil when off

	srv     *http.Server
	handler *blockserver.Handler
	served  chan error
	cancel  context.CancelFunc
	workers sync.WaitGroup
}

// StartBlockServer opens cfg.Dir, serves it on cfg.Listen, registers it
// with reg and keeps it registered (heartbeats), and starts its scrub.
// Close stops it all.
func StartBlockServer(ctx context.Context, reg Registry, cfg BlockServerConfig) (_ *BlockServerNode, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	n := &BlockServerNode{served: make(chan error, 1)}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	if err := cfg.Limits.Check(); err != nil {
		return nil, err
	}
	if n.Store, err = disk.Open(cfg.Dir); err != nil {
		return nil, err
	}
	if cfg.WriteCache != 0 {
		n.Store.SetWriteCache(cfg.WriteCache)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("block server listen on %s: %w", cfg.Listen, err)
	}
	addr := ln.Addr().String()
	if cfg.ID == "" {
		cfg.ID = "b-" + addr
	}
	// The server's own lines name it once, by id (the "block server" line
	// is what scripts read addresses from); its parts' lines carry blockd=ID.
	own := log
	log = log.With("blockd", cfg.ID)
	var wctx context.Context
	wctx, n.cancel = context.WithCancel(ctx)
	opts := blockserver.Options{Logger: log, Creds: cfg.Creds, Limits: cfg.Limits}
	if cfg.ScrubRate != 0 {
		n.Scrub = scrub.New(scrub.Config{Store: n.Store, Rate: cfg.ScrubRate, Interval: cfg.ScrubInterval, Logger: log})
		opts.Scrub = n.Scrub.Progress
	}
	n.handler = blockserver.New(n.Store, opts)
	var handler http.Handler = n.handler
	if cfg.Metrics != nil {
		reg := prometheus.WrapRegistererWith(prometheus.Labels{"server": cfg.ID}, cfg.Metrics)
		handler = metrics.BlockHTTP(handler, metrics.NewBlockRequests(reg))
		metrics.BlockStore(reg, n.Store, n.Scrub)
	}
	n.srv = blockserver.NewHTTPServer(addr, handler, log)
	cfg.Limits.ConfigureServer(n.srv)
	// The connection cap counts connections before their TLS handshake.
	ln = blockserver.Listener(blockserver.LimitListener(ln, cfg.Limits, log), cfg.Creds)
	go func() { n.served <- n.srv.Serve(ln) }()
	n.Server = meta.Server{ID: cfg.ID, Addr: addr, Dir: cfg.Dir, Host: cfg.Host, Rack: cfg.Rack, Site: cfg.Site}
	if _, err := reg.RegisterServer(ctx, n.Server); err != nil {
		return nil, fmt.Errorf("register block server %s: %w", cfg.ID, err)
	}
	n.workers.Add(1)
	go func() {
		defer n.workers.Done()
		meta.Heartbeat(wctx, reg, n.Server, cfg.Heartbeat, log)
	}()
	if n.Scrub != nil {
		n.workers.Add(1)
		go func() {
			defer n.workers.Done()
			n.Scrub.Run(wctx)
		}()
	}
	own.Info("block server", "id", cfg.ID, "listen", addr, "dir", cfg.Dir, "scrub_rate", cfg.ScrubRate, "tls", cfg.Creds != nil)
	return n, nil
}

// Done returns a channel that receives the HTTP service's error if it
// stops serving by itself.
func (n *BlockServerNode) Done() <-chan error { return n.served }

// Close stops the heartbeats and the scrub, shuts the HTTP service down
// (bounded) and closes the store.
func (n *BlockServerNode) Close() error {
	if n.cancel != nil {
		n.cancel()
	}
	n.workers.Wait()
	var errs []error
	if n.srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.srv.Shutdown(sctx); err != nil {
			errs = append(errs, err)
		}
	}
	if n.handler != nil {
		n.handler.Close()
	}
	if n.Store != nil {
		errs = append(errs, n.Store.Close())
	}
	return errors.Join(errs...)
}
