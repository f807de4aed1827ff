package client

import (
	"context"
	"net/http"

	"tessera/internal/block"
)

var _ block.SpaceReporter = (*Client)(nil)

// SpaceInfo returns what the server's store takes on disk and its file
// system's free and total bytes and name (GET /v1/space; block.Space).
// OnDisk is -1 when the server cannot say. A reply out of bounds (negative
// figures, a name longer than block.MaxFSName) is an error that says so.
func (c *Client) SpaceInfo(ctx context.Context) (block.Space, error) {
	const op = "space"
	var reply struct {
		OnDisk *int64 `json:"on_disk"`
		Free   int64  `json:"free"`
		Size   int64  `json:"size"`
		FS     string `json:"fs"`
	}
	if err := c.doJSON(ctx, op, http.MethodGet, c.base+"/v1/space", &reply); err != nil {
		return block.Space{}, err
	}
	sp := block.Space{OnDisk: -1, Free: reply.Free, Size: reply.Size, FS: reply.FS}
	if reply.OnDisk != nil {
		sp.OnDisk = *reply.OnDisk
	}
	switch {
	case len(sp.FS) > block.MaxFSName:
		return block.Space{}, c.errorf(op, "file system name of %d bytes, more than %d", len(sp.FS), block.MaxFSName)
	case sp.Free < 0 || sp.Size < 0 || (reply.OnDisk != nil && *reply.OnDisk < 0):
		return block.Space{}, c.errorf(op, "negative figures in the reply (free %d, size %d, on disk %d)", sp.Free, sp.Size, sp.OnDisk)
	}
	return sp, nil
}
