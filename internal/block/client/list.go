package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strconv"
	"time"

	"tessera/internal/block"
)

// listStall is how long a listing may go without progress (a record read
// and handled) before its try is cut.
const listStall = 30 * time.Second

// List calls fn for every block the server holds. It retries only while no
// block has been handed to fn; it fails unless the server confirms that the
// listing is complete. An error from fn stops the listing and is returned.
func (c *Client) List(ctx context.Context, fn func(block.Info) error) error {
	const op = "list blocks"
	var delivered int64
	return c.do(ctx, op, 0, func(a *attempt) (bool, error) {
		resp, err := c.get(a, op, c.base+"/v1/list", "")
		if err != nil {
			return delivered == 0, err
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusOK {
			retry, err := c.statusErr(op, resp)
			return retry && delivered == 0, err
		}
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		var rec [listRecordSize]byte
		var count int64
		for {
			a.timer.Reset(listStall)
			_, err := io.ReadFull(br, rec[:])
			if err == io.EOF {
				break
			}
			if err != nil {
				return delivered == 0, a.transportErr(op+": read reply", err)
			}
			info := block.Info{
				Hash:    block.Hash(rec[:block.HashSize]),
				Size:    int64(binary.BigEndian.Uint64(rec[block.HashSize:])),
				ModTime: int64(binary.BigEndian.Uint64(rec[block.HashSize+8:])),
			}
			count++
			if err := fn(info); err != nil {
				return false, c.errorf(op, "%w", err)
			}
			delivered++
		}
		if msg := resp.Trailer.Get(listErrorTrailer); msg != "" {
			return delivered == 0, c.errorf(op, "server failed after %d blocks: %s", count, msg)
		}
		if want := resp.Trailer.Get(listCountTrailer); want != strconv.FormatInt(count, 10) {
			return false, c.errorf(op, "listing incomplete: received %d blocks, server count %q", count, want)
		}
		return false, nil
	})
}
