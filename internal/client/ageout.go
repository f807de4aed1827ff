package client

import (
	"context"
	"time"
)

// DefaultMaxUncommitted is how long a client leaves written data
// uncommitted at most (Config.MaxUncommitted).
const DefaultMaxUncommitted = 10 * time.Minute

// commitAged commits, every tick, the files whose oldest uncommitted write
// is older than limit, until stop is closed. Policies that commit on sync or
// close leave a file open for hours with its blocks uploaded but named by
// no recipe; the background collector (grace 1 h by default) would remove
// them. Committing them after limit keeps every upload a client still holds
// younger than limit+tick as far as the collector can tell — well inside its
// grace. Write-once files (immutable) are left alone: their first commit is
// their only one. A failed commit is retried at the next tick and at close.
func (c *Client) commitAged(limit time.Duration, stop <-chan struct{}) {
	tick := min(max(limit/10, 100*time.Millisecond), time.Minute)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		files := make([]*file, 0, len(c.mu.files))
		for _, f := range c.mu.files {
			files = append(files, f)
		}
		c.mu.Unlock()
		for _, f := range files {
			if f.dirtyFor() < limit {
				continue
			}
			f.mu.Lock()
			if !c.PolicyFor(f.policyName).Knobs().WriteOnce {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := f.commitLocked(ctx); err != nil {
					c.log.Warn("commit of data written long ago failed; retrying later", "inode", f.ino, "err", err)
				} else {
					c.aged.Add(1)
				}
				cancel()
			}
			f.mu.Unlock()
		}
	}
}
