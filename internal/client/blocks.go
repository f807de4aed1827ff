package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// getBlock returns a verified block from the caches or the block servers.
// Concurrent requests for the same hash share one fetch. urgent says a
// reader waits for it (false for read-ahead): its fetch goes before the
// read-ahead queued for the same server. The caller may keep the bytes:
// their memory is never reused (blockBuf.keep).
func (c *Client) getBlock(ctx context.Context, h block.Hash, urgent bool) ([]byte, error) {
	b, err := c.getBuf(ctx, h, urgent)
	if err != nil {
		return nil, err
	}
	data := b.keep()
	b.release()
	return data, nil
}

// getPiece is getBlock for a piece of a composed block a reader assembles.
func (c *Client) getPiece(ctx context.Context, h block.Hash) ([]byte, error) {
	return c.getBlock(ctx, h, true)
}

// getBuf is getBlock returning the block with a reference the caller must
// release once done with its bytes, and must not use them after.
func (c *Client) getBuf(ctx context.Context, h block.Hash, urgent bool) (*blockBuf, error) {
	if b := c.mem.get(h); b != nil {
		return b, nil
	}
	c.mu.Lock()
	if fl, ok := c.mu.flights[h]; ok {
		fl.waiters++
		c.mu.Unlock()
		if urgent {
			fl.urgent.Store(true)
		}
		select {
		case <-fl.done:
			return fl.buf, fl.err
		case <-ctx.Done():
			c.mu.Lock()
			if c.mu.flights[h] == fl {
				fl.waiters-- // no reference will be given
				c.mu.Unlock()
				return nil, ctx.Err()
			}
			c.mu.Unlock()
			<-fl.done // landed: a reference was counted for this waiter
			if fl.err == nil {
				fl.buf.release()
			}
			return nil, ctx.Err()
		}
	}
	fl := &flight{done: make(chan struct{})}
	fl.urgent.Store(urgent)
	c.mu.flights[h] = fl
	c.mu.Unlock()

	comp, composed := c.comps.get(h)
	if composed {
		// Stored as pieces: fetched (each taking its own fetch slot)
		// and put together.
		var data []byte
		data, fl.err = c.assemble(withUrgency(ctx, &fl.urgent), h, comp, c.getPiece)
		if fl.err == nil {
			fl.buf = newBlockBuf(data, false, nil)
		}
		if fl.err == nil && c.cfg.CompactAfter > 0 {
			c.compacts.addRead(compactJob{h: h, at: time.Now()})
		}
		if errors.Is(fl.err, block.ErrNotFound) {
			// Stored whole since, and its pieces reclaimed.
			c.comps.drop(h)
			composed = false
		}
	}
	if !composed {
		c.fetches <- struct{}{}
		fl.buf, fl.err = c.fetch(withUrgency(ctx, &fl.urgent), h)
		<-c.fetches
	}
	if fl.err == nil {
		c.mem.put(h, fl.buf)
		// A fetch that lands is use: read-ahead still arriving after
		// the read that started it must not find the cache released
		// and fill it again for an idle client (memory.go).
		c.active.touch(time.Now())
	}
	c.mu.Lock()
	delete(c.mu.flights, h)
	n := fl.waiters
	c.mu.Unlock()
	if fl.err == nil {
		fl.buf.refs.Add(int32(n)) // the waiters'; this fetch still holds its own
	}
	close(fl.done)
	return fl.buf, fl.err
}

// fetch finds a verified copy of h, nearest first: a local copy checked
// against known segment sums, the disk cache, the cache tier, the block
// servers. What came from further away is kept nearer. The block comes
// with the caller's reference; it is read into a pooled buffer when the
// source can read into one (a local copy, a block server).
func (c *Client) fetch(ctx context.Context, h block.Hash) (*blockBuf, error) {
	if e, ok := c.sums.get(h); ok {
		data := c.allocFetch(int(e.size))
		if c.preadLocal(h, data, 0) {
			if e.check(data, 0) {
				return newBlockBuf(data, true, c.pool), nil
			}
			c.localChanged(h)
		}
	}
	if c.disk != nil {
		if data, ok := c.disk.get(h); ok {
			c.learnSums(h, data)
			return newBlockBuf(data, false, c.pool), nil
		}
	}
	if c.tier != nil {
		if data, ok := c.tier.Lookup(ctx, h); ok {
			c.learnSums(h, data)
			return newBlockBuf(data, false, c.pool), nil
		}
	}
	data, local, own, err := c.router.get(ctx, h, c.allocFetch)
	if err != nil {
		return nil, err
	}
	c.learnSums(h, data)
	if c.disk != nil && !local && c.disk.put(h, data) {
		own = false // the disk cache's writer holds it
	}
	if c.tier != nil {
		c.tier.Fill(h, data) // copies
	}
	return newBlockBuf(data, own, c.pool), nil
}

// allocFetch returns a buffer of length n for a fetch: pooled, or fresh
// with the hasher's slack.
func (c *Client) allocFetch(n int) []byte {
	if b := c.pool.get(n); b != nil {
		return b
	}
	return make([]byte, n, n+hashSlack)
}

// readAheadBlocks is the read-ahead depth for blocks of bs bytes (see
// Config.ReadAheadBlocks).
func (c *Client) readAheadBlocks(bs int64) int {
	if c.cfg.ReadAheadBlocks > 0 {
		return c.cfg.ReadAheadBlocks
	}
	return autoReadAhead(c.router.upServers(), bs, c.cfg.MemCacheBytes)
}

// autoReadAhead is the default read-ahead depth with n up servers.
func autoReadAhead(n int, bs, memBytes int64) int {
	d := max(6*n, 8)
	if bs > 0 {
		d = min(d, int(memBytes*3/4/bs))
	}
	return max(d, 1)
}

// prefetch fetches h in the background unless it is cached or in flight.
// A block with a copy on this host whose segment sums are known is not
// fetched but read into the kernel's page cache (adviseLocal): the reader
// reads its ranges from there straight into its reply, checked against the
// sums, with no copy of the block in the process.
func (c *Client) prefetch(h block.Hash) {
	if c.mem.contains(h) {
		return
	}
	c.mu.Lock()
	_, busy := c.mu.flights[h]
	c.mu.Unlock()
	if busy {
		return
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if e, ok := c.sums.get(h); ok && c.adviseLocal(h, e.size) {
			return
		}
		b, err := c.getBuf(context.Background(), h, false)
		if err != nil {
			c.log.Debug("read-ahead failed", "block", h.Short(), "err", err)
			return
		}
		b.release() // the cache holds it
	}()
}

// upload hashes data and stores the copies spec asks for (the zero Spec:
// the cluster's default); an all-zero block becomes a hole. It returns once
// a majority of the copies (of a site spec: of the sites) are durable; rep
// completes when all were tried, and is returned with a failure too, while
// copies may still use data.
func (c *Client) upload(ctx context.Context, data []byte, spec placement.Spec) (h block.Hash, rep *replication, err error) {
	return c.uploadSum(ctx, data, spec, block.Sum)
}

// uploadSum is upload with data named by sum (block.Sum, or sumTree to
// keep the block's tree).
func (c *Client) uploadSum(ctx context.Context, data []byte, spec placement.Spec, sum func([]byte) block.Hash) (h block.Hash, rep *replication, err error) {
	if block.AllZero(data) {
		return block.Hash{}, nil, nil
	}
	h = sum(data)
	c.uploads <- struct{}{}
	rep, err = c.router.put(ctx, h, data, spec)
	<-c.uploads
	if err != nil {
		return h, rep, fmt.Errorf("upload: %w", err)
	}
	// The buffer goes back to the writer's free list, so it is not kept in
	// the memory cache; the segment sums let reads of the fresh copies on
	// this host check just what they read.
	c.learnSums(h, data)
	return h, rep, nil
}

// readRange copies block h's bytes from offset `from` into dst. It reads only
// the needed segments of a copy on this host when the block's segment sums
// are known, else the whole block (verified, and cached).
func (c *Client) readRange(ctx context.Context, h block.Hash, from int64, dst []byte) error {
	if b := c.mem.get(h); b != nil {
		copyBlock(dst, b.data, from)
		b.release()
		return nil
	}
	if e, ok := c.sums.get(h); ok && c.readLocal(h, e, from, dst) {
		return nil
	}
	b, err := c.getBuf(ctx, h, true)
	if err != nil {
		return err
	}
	copyBlock(dst, b.data, from)
	b.release()
	return nil
}

// readLocal copies block h's bytes from offset `from` into dst from a copy on
// this host, reading the segments that cover them and checking them against
// e. A read of whole segments (every page-cache read of the kernel) goes
// straight into dst. It reports false when there is no good local copy.
func (c *Client) readLocal(h block.Hash, e *sumEntry, from int64, dst []byte) bool {
	if from >= e.size {
		clear(dst)
		return true
	}
	n := min(int64(len(dst)), e.size-from)
	off, end, first := e.span(from, n)
	buf := dst[:n]
	if off != from || end != from+n {
		buf = make([]byte, end-off)
	}
	if !c.preadLocal(h, buf, off) {
		return false
	}
	if !e.check(buf, first) {
		c.localChanged(h)
		return false
	}
	if off != from || end != from+n {
		copy(dst, buf[from-off:])
	}
	clear(dst[n:])
	return true
}

// learnSums records the segment sums of verified block data, when there
// is a copy on this host to check against them later (a co-located block
// server or the disk cache): they cost a CRC pass over every byte moved.
func (c *Client) learnSums(h block.Hash, data []byte) {
	if c.disk != nil || c.router.anyLocal() {
		c.sums.learn(h, data)
	}
}

// localChanged handles a local copy that no longer matches the sums learned
// from a verified copy: the sums are dropped and the next read verifies a
// whole copy again (finding and reporting the bad one).
func (c *Client) localChanged(h block.Hash) {
	c.log.Error("a local copy of a block changed since it was verified; verifying again", "block", h.String())
	c.sums.forget(h)
	c.files.drop(h)
}

// makeRoom schedules the upload of every dirty block of every open file, to
// free dirty-memory budget. It reports how many uploads are now under way.
func (c *Client) makeRoom() int {
	c.mu.Lock()
	files := make([]*file, 0, len(c.mu.files))
	for _, f := range c.mu.files {
		files = append(files, f)
	}
	c.mu.Unlock()
	n := 0
	for _, f := range files {
		f.mu.Lock()
		if f.loaded {
			now := time.Now()
			for _, d := range f.dirty {
				if d.retryAt.After(now) {
					continue // its upload failed: back off
				}
				f.scheduleLocked(d)
			}
			n += f.nInflight
		}
		f.mu.Unlock()
	}
	return n
}

// Quotas returns the meta service's quota calls (meta.QuotaAPI), or nil
// when the API the client was given has none.
func (c *Client) Quotas() meta.QuotaAPI {
	qa, _ := c.cfg.Meta.(meta.QuotaAPI)
	return qa
}
