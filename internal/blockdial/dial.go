package blockdial

import (
	"net/http"
	"os"
	"sync"

	"tessera/internal/admin"
	"tessera/internal/auth"
	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/block/disk"
	"tessera/internal/meta"
)

// Dialer dials block servers with one process's credentials: the meta
// process with its "meta" certificate, a mount with its "client-rw" one,
// an admin command with an "admin" certificate or a token. Its clients
// share one Transport, so that idle connections are pooled per server.
type Dialer struct {
	creds *auth.Credentials // nil: plain HTTP (--insecure)
	tr    *http.Transport
	err   error // a malformed RoutesEnv: every dial fails with it
}

// New returns the Dialer of a process holding creds (nil: plain HTTP,
// for clusters started with --insecure).
// Connections follow the routes of RoutesEnv when it is set.
func New(creds *auth.Credentials) *Dialer {
	d := &Dialer{creds: creds, tr: blockclient.NewTLSTransport(creds)}
	d.err = reroute(d.tr)
	return d
}

// Block returns a client of block server s; it is the client.Dialer of
// every mount. When s runs on this host and its directory is readable,
// blocks are read straight from its files (the co-located fast path of
// lpNFS) and everything else still goes over HTTP.
func (d *Dialer) Block(s meta.Server) (block.Store, error) {
	if d.err != nil {
		return nil, d.err
	}
	remote := blockclient.New(s.Addr, blockclient.Options{Transport: d.tr, Creds: d.creds})
	if host, _ := os.Hostname(); s.Dir != "" && s.Host == host {
		if lr := disk.NewLocalReader(s.Dir, remote, nil); lr != nil {
			return lr, nil
		}
	}
	return remote, nil
}

// Admin is Block for the meta role's background work and the admin
// commands, which also list and remove blocks.
func (d *Dialer) Admin(s meta.Server) (admin.BlockServer, error) {
	if d.err != nil {
		return nil, d.err
	}
	return blockclient.New(s.Addr, blockclient.Options{Transport: d.tr, Creds: d.creds}), nil
}

// Remover is Admin for the reclaimer, which removes blocks in batches
// (block.BatchRemover: one POST /v1/remove per batch).
func (d *Dialer) Remover(s meta.Server) (block.BatchRemover, error) {
	if d.err != nil {
		return nil, d.err
	}
	return blockclient.New(s.Addr, blockclient.Options{Transport: d.tr, Creds: d.creds}), nil
}

// insecure is the Dialer of DialBlockServer and DialAdmin.
var insecure = sync.OnceValue(func() *Dialer { return New(nil) })

// DialBlockServer is Block of a Dialer without credentials: plain HTTP, for
// block servers started with --insecure.
func DialBlockServer(s meta.Server) (block.Store, error) { return insecure().Block(s) }

// DialAdmin is Admin of a Dialer without credentials (DialBlockServer).
func DialAdmin(s meta.Server) (admin.BlockServer, error) { return insecure().Admin(s) }
