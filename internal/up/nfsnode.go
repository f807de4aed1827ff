package up

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"

	"tessera/internal/client"
	"tessera/internal/nfs"
	"tessera/internal/vfs"
)

// NFSConfig is an NFS server: `tessera nfs` runs one, `tessera up --nfs`
// one beside its mount.
type NFSConfig struct {
	// Client is the server's Tessera client (a client like a mount's:
	// it keeps a session with the meta service).
	Client client.Config
	Listen string // HOST:PORT for NFS and MOUNT
	// Server is the rest (export, squash, allow, read-only, cluster id).
	Server nfs.Config
}

// NFSNode is a running NFS server.
type NFSNode struct {
	Addr   string
	Client *client.Client
	v      *vfs.FS
	done   chan error
	cancel context.CancelFunc
	log    *slog.Logger
}

// StartNFS starts an NFS server made from cfg; Close stops it.
func StartNFS(ctx context.Context, cfg NFSConfig) (*NFSNode, error) {
	log := cfg.Client.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.Client.Sessions = true
	// The server keeps attributes for its LOOKUP, GETATTR and ACCESS as
	// a mount's kernel does (vfs.Options.AttrCache); what another client
	// changes and this one hears of is dropped from them, before the
	// callback is acknowledged (OnCallback).
	inv := new(vfs.Invalidations)
	if next := cfg.Client.OnInvalidate; next != nil {
		inv.Subscribe(next)
	}
	cfg.Client.OnInvalidate = inv.Invalidate
	called := new(vfs.Invalidations)
	if next := cfg.Client.OnCallback; next != nil {
		called.Subscribe(next)
	}
	cfg.Client.OnCallback = called.Invalidate
	cl, err := client.New(ctx, cfg.Client)
	if err != nil {
		return nil, fmt.Errorf("nfs: %w", err)
	}
	v := vfs.New(cl, vfs.Options{Logger: log, AttrCache: true})
	called.Subscribe(v.Invalidate)
	inv.Subscribe(v.Invalidate) // also the open files of a lost session
	cfg.Server.Logger = log
	// The write verifier changes at every start.
	var verifier [8]byte
	if _, err := rand.Read(verifier[:]); err != nil {
		cl.Close(context.Background())
		return nil, err
	}
	srv, err := nfs.New(ctx, v, cfg.Server, verifier)
	if err != nil {
		cl.Close(context.Background())
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cl.Close(context.Background())
		return nil, fmt.Errorf("nfs: listen %s: %w", cfg.Listen, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	n := &NFSNode{Addr: ln.Addr().String(), Client: cl, v: v, done: make(chan error, 1), cancel: cancel, log: log}
	go func() { n.done <- srv.Serve(sctx, ln) }()
	log.Info("nfs: serving NFSv3 and MOUNT", "listen", n.Addr, "export", cfg.Server.Export, "squash", string(cfg.Server.Squash), "read_only", cfg.Server.ReadOnly)
	return n, nil
}

// Done reports the end of serving (an error if the listener failed).
func (n *NFSNode) Done() <-chan error { return n.done }

// Close stops serving, releases the handles the server holds (committing
// what they have) and closes the client.
func (n *NFSNode) Close() error {
	n.cancel()
	err := <-n.done
	n.done <- err
	n.v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if cerr := n.Client.Close(ctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
