package client

import (
	"context"
	"net/http"

	"tessera/internal/block"
	"tessera/internal/block/scrub"
)

var _ block.Checker = (*Client)(nil)

// Check implements block.Checker over POST /v1/check: the server re-hashes
// its copy of h where it lies and, with quarantine, moves a corrupt one
// aside.
func (c *Client) Check(ctx context.Context, h block.Hash, quarantine bool) error {
	op := "check block " + h.String()
	url := c.base + "/v1/check/" + h.String()
	if quarantine {
		url += "?quarantine=1"
	}
	var reply struct {
		State  string `json:"state"`
		Detail string `json:"detail"`
	}
	if err := c.doJSONSized(ctx, op, http.MethodPost, url, c.maxSize, &reply); err != nil {
		return err
	}
	switch reply.State {
	case "good":
		return nil
	case "missing":
		return c.errorf(op, "%w", block.ErrNotFound)
	case "corrupt":
		return c.errorf(op, "%w: server reports: %s", block.ErrCorrupt, reply.Detail)
	}
	return c.errorf(op, "unknown state %q in the reply", reply.State)
}

// Scrub returns the server's scrub progress (GET /v1/scrub); a server that
// runs none answers with an error wrapping block.ErrNotFound.
func (c *Client) Scrub(ctx context.Context) (scrub.Progress, error) {
	var p scrub.Progress
	err := c.doJSON(ctx, "scrub progress", http.MethodGet, c.base+"/v1/scrub", &p)
	if err != nil {
		return scrub.Progress{}, err
	}
	return p, nil
}
