package up

import (
	"net/http"
	"os"
	"sync"

	"tessera/internal/admin"
	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/block/disk"
	"tessera/internal/meta"
)

// transport is shared by every block-server client of the process so that
// idle connections are pooled per server.
var transport = sync.OnceValue(func() *http.Transport { return blockclient.NewTransport() })

// DialBlockServer returns an HTTP client for block server s; it is the
// client.Dialer of every mount. When s runs on this host and its directory
// is readable, blocks are read straight from its files (the co-located fast
// path of lpNFS) and everything else still goes over HTTP.
func DialBlockServer(s meta.Server) (block.Store, error) {
	remote := blockclient.New(s.Addr, blockclient.Options{Transport: transport()})
	if host, _ := os.Hostname(); s.Dir != "" && s.Host == host {
		if lr := disk.NewLocalReader(s.Dir, remote, nil); lr != nil {
			return lr, nil
		}
	}
	return remote, nil
}

// DialAdmin is DialBlockServer for the admin commands, which also list and
// remove blocks.
func DialAdmin(s meta.Server) (admin.BlockServer, error) {
	return blockclient.New(s.Addr, blockclient.Options{Transport: transport()}), nil
}
