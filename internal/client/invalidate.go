package client

import "tessera/internal/meta"

// Invalidate makes the client read ino's attributes and recipe again
// before their next use, as a callback from the meta service would: for a
// change the caller knows was committed by another client whose callback
// may not reach this one (a caching gateway that stored blocks of a file
// this mount has open: internal/fuse/gateway.go). A file not open here
// has nothing cached to drop.
func (c *Client) Invalidate(ino meta.Ino) {
	c.mu.Lock()
	f := c.mu.files[ino]
	c.mu.Unlock()
	if f != nil {
		f.enqueue(meta.Callback{Ino: ino, Kind: meta.CallbackInvalidate})
	}
}
