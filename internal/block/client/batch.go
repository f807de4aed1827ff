package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"tessera/internal/block"
)

// removeWork is what one removal of POST /v1/remove adds to a try's
// timeout, counted as bytes at MinRate (16 KiB: 16 ms at 1 MiB/s): the
// server unlinks every block before it answers, a few milliseconds each on
// a busy disk, so a full batch would not fit in a small request's two
// seconds.
const removeWork = 16 << 10

// Has asks the server which of hs it holds, in batches.
func (c *Client) Has(ctx context.Context, hs []block.Hash) ([]bool, error) {
	return c.has(ctx, hs, false)
}

// Touch asks the server which of hs it holds and to mark those as just
// written (block.Toucher), in batches.
func (c *Client) Touch(ctx context.Context, hs []block.Hash) ([]bool, error) {
	return c.has(ctx, hs, true)
}

func (c *Client) has(ctx context.Context, hs []block.Hash, touch bool) ([]bool, error) {
	out := make([]bool, 0, len(hs))
	for len(hs) > 0 {
		batch := hs[:min(len(hs), maxHasBatch)]
		hs = hs[len(batch):]
		has, err := c.hasBatch(ctx, batch, touch)
		if err != nil {
			return nil, err
		}
		out = append(out, has...)
	}
	return out, nil
}

func (c *Client) hasBatch(ctx context.Context, hs []block.Hash, touch bool) ([]bool, error) {
	op, url := fmt.Sprintf("has %d blocks", len(hs)), c.base+"/v1/has"
	if touch {
		op, url = fmt.Sprintf("touch %d blocks", len(hs)), url+"?touch=1"
	}
	body := make([]byte, 0, len(hs)*block.HashSize)
	for _, h := range hs {
		body = append(body, h[:]...)
	}
	return c.postForBits(ctx, op, url, body, len(hs), int64(len(body)), nil)
}

// postForBits POSTs body, a batch of n items, to url and returns the
// reply's one byte per item as booleans (POST /v1/has, /v1/remove). work
// is the try's size at MinRate; refused, when given, may turn a reply into
// an error of its own before its status is judged.
func (c *Client) postForBits(ctx context.Context, op, url string, body []byte, n int, work int64, refused func(*http.Response) error) ([]bool, error) {
	out := make([]bool, n)
	err := c.do(ctx, op, work, func(a *attempt) (bool, error) {
		req, err := http.NewRequestWithContext(a.ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return false, c.errorf(op, "%w", err)
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := c.hc.Do(req)
		if err != nil {
			return true, a.transportErr(op, err)
		}
		defer drain(resp)
		if refused != nil {
			if err := refused(resp); err != nil {
				return false, c.errorf(op, "%w", err)
			}
		}
		if resp.StatusCode != http.StatusOK {
			return c.statusErr(op, resp)
		}
		reply, err := io.ReadAll(io.LimitReader(resp.Body, int64(n)+1))
		if err != nil {
			return true, a.transportErr(op+": read body", err)
		}
		if len(reply) != n {
			return false, c.errorf(op, "reply of %d bytes, want %d", len(reply), n)
		}
		for i, b := range reply {
			out[i] = b == 1
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Remove asks the server to delete h if its latest Put is before notAfter.
func (c *Client) Remove(ctx context.Context, h block.Hash, notAfter int64) (bool, error) {
	op := "remove block " + h.String()
	var reply struct {
		Removed bool `json:"removed"`
	}
	url := c.blockURL(h) + "?older-than=" + strconv.FormatInt(notAfter, 10)
	err := c.doJSON(ctx, op, http.MethodDelete, url, &reply)
	return reply.Removed, err
}

// RemoveMany asks the server to delete each rs[i].Hash if its latest Put is
// before rs[i].NotAfter (block.BatchRemover), in batches of at most the
// server's limit (POST /v1/remove; one DELETE per removal on a server
// older than that route). A retried batch may report false for a block
// its lost first try removed: the count is a floor, the removals are
// right.
func (c *Client) RemoveMany(ctx context.Context, rs []block.Removal) ([]bool, error) {
	out := make([]bool, 0, len(rs))
	for len(rs) > 0 {
		batch := rs[:min(len(rs), maxRemoveBatch)]
		rs = rs[len(batch):]
		removed, err := c.removeBatch(ctx, batch)
		if errors.Is(err, errNoRemoveRoute) {
			removed, err = c.removeEach(ctx, batch)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, removed...)
	}
	return out, nil
}

// errNoRemoveRoute reports a server that does not know POST /v1/remove
// (one of a release before it, during a rolling upgrade).
var errNoRemoveRoute = errors.New("server has no POST /v1/remove")

// removeEach is RemoveMany for a server without POST /v1/remove: one
// DELETE per removal, each with its own cutoff.
func (c *Client) removeEach(ctx context.Context, rs []block.Removal) ([]bool, error) {
	out := make([]bool, len(rs))
	for i, r := range rs {
		removed, err := c.Remove(ctx, r.Hash, r.NotAfter)
		if err != nil {
			return nil, err
		}
		out[i] = removed
	}
	return out, nil
}

func (c *Client) removeBatch(ctx context.Context, rs []block.Removal) ([]bool, error) {
	op, url := fmt.Sprintf("remove %d blocks", len(rs)), c.base+"/v1/remove"
	body := make([]byte, 0, len(rs)*removeRecordSize)
	for _, r := range rs {
		body = append(body, r.Hash[:]...)
		body = binary.BigEndian.AppendUint64(body, uint64(r.NotAfter))
	}
	return c.postForBits(ctx, op, url, body, len(rs), int64(len(body))+int64(len(rs))*removeWork, func(resp *http.Response) error {
		if (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) && resp.Header.Get(errorHeader) == "" {
			// The router's refusal, not the handler's: an older server.
			return errNoRemoveRoute
		}
		return nil
	})
}
