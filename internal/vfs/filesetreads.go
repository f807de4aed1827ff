package vfs

import (
	"context"
	"sync"
	"time"

	"tessera/internal/meta"
)

// readsReportDelay is how long a mount gathers read counts of filesets
// before it reports them (one meta call per fileset read from meanwhile).
const readsReportDelay = 5 * time.Second

// readCounts are the bytes this mount read from fileset files, per
// fileset, not reported yet (meta.FilesetReads: Hit served from the
// cache, Miss needed a gateway first). They reach the meta service through
// the Gateway when it implements meta.FilesetReadsAPI, at most every
// readsReportDelay, for `tessera fileset status`'s hit ratio.
type readCounts struct {
	mu      sync.Mutex
	m       map[meta.Ino]meta.FilesetReads
	pending bool // a report is scheduled
}

// countRead adds n bytes read from fileset root to the counts and makes
// sure a report follows.
func (v *FS) countRead(root meta.Ino, n int, miss bool) {
	ra, ok := v.opts.Gateway.(meta.FilesetReadsAPI)
	if !ok || root == 0 || n <= 0 {
		return
	}
	rc := &v.reads
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.m == nil {
		rc.m = make(map[meta.Ino]meta.FilesetReads)
	}
	c := rc.m[root]
	if miss {
		c.MissBytes += uint64(n)
	} else {
		c.HitBytes += uint64(n)
	}
	rc.m[root] = c
	if !rc.pending {
		rc.pending = true
		time.AfterFunc(readsReportDelay, func() { v.reportReads(ra) })
	}
}

// reportReads sends the counts gathered; counts that could not be sent
// are kept for the next report (a meta outage loses none of them while
// the mount lives).
func (v *FS) reportReads(ra meta.FilesetReadsAPI) {
	rc := &v.reads
	rc.mu.Lock()
	m := rc.m
	rc.m, rc.pending = nil, false
	rc.mu.Unlock()
	for root, c := range m {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := ra.AddFilesetReads(ctx, root, c)
		cancel()
		if err != nil {
			v.log.Debug("fileset read counts not reported; kept for the next report", "fileset", root, "err", err)
			rc.mu.Lock()
			if rc.m == nil {
				rc.m = make(map[meta.Ino]meta.FilesetReads)
			}
			k := rc.m[root]
			k.HitBytes += c.HitBytes
			k.MissBytes += c.MissBytes
			rc.m[root] = k
			rc.mu.Unlock()
		}
	}
}
