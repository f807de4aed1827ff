package up

import (
	"net/http"
	"sync"

	"tessera/internal/admin"
	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/meta"
)

// transport is shared by every block-server client of the process so that
// idle connections are pooled per server.
var transport = sync.OnceValue(func() *http.Transport { return blockclient.NewTransport() })

// DialBlockServer returns an HTTP client for block server s; it is the
// client.Dialer of every mount.
func DialBlockServer(s meta.Server) (block.Store, error) {
	return blockclient.New(s.Addr, blockclient.Options{Transport: transport()}), nil
}

// DialAdmin is DialBlockServer for the admin commands, which also list and
// remove blocks.
func DialAdmin(s meta.Server) (admin.BlockServer, error) {
	return blockclient.New(s.Addr, blockclient.Options{Transport: transport()}), nil
}
