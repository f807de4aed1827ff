// Package admin holds the operator's whole-cluster commands: status, gc
// (the CAPFS cleaner) and fsck. Each works through the meta service's API and
// the block servers' HTTP interface, so it runs from any machine that can
// reach them, while the cluster serves.
//
// Status only reads: the mover's latest report (under-replicated, lost
// blocks with their inodes), the servers' usage and scrub progress. Fsck
// only reads unless FsckOptions.Repair: it checks every copy where it lies
// (block.Checker) and, with Repair, has corrupt copies moved aside, never
// deleted; the mover then restores them from good copies. Gc removes
// unreferenced blocks older than its grace period. Drain marks a server
// draining and, if asked, waits until it holds no live block.
//
// GC, Fsck and a waiting Drain report how far they are through
// Cluster.Progress (progress.go): one report per unit of work, the caller
// decides what to show (the command line draws a bar or prints lines).
package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/scrub"
	"tessera/internal/meta"
)

// BlockServer is what admin needs of a block server: fsck checks copies
// where they lie (block.Checker).
type BlockServer interface {
	block.Store
	block.Lister
	block.Checker
}

// Cluster is a meta service and a way to reach the block servers it lists.
type Cluster struct {
	Meta meta.API
	Dial func(meta.Server) (BlockServer, error)
	// Progress, if set, receives reports of GC, Fsck and Drain as they
	// go, for a progress bar.
	Progress ProgressFunc
	// Describe, if set, tells Status the cluster's name, its meta
	// processes and its store's members (cluster.go).
	Describe func(ctx context.Context) (ClusterView, error)
}

func (c *Cluster) servers(ctx context.Context) ([]meta.Server, map[string]BlockServer, error) {
	m, err := c.Meta.Servers(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("block-server map: %w", err)
	}
	stores, err := c.dialAll(m)
	return m.Servers, stores, err
}

// dialAll dials every server of m.
func (c *Cluster) dialAll(m meta.ServerMap) (map[string]BlockServer, error) {
	out := make(map[string]BlockServer, len(m.Servers))
	for _, s := range m.Servers {
		bs, err := c.Dial(s)
		if err != nil {
			return nil, fmt.Errorf("block server %s at %s: %w", s.ID, s.Addr, err)
		}
		out[s.ID] = bs
	}
	return out, nil
}

// StatusReport is what `tessera status` prints.
type StatusReport struct {
	Files        uint64
	LogicalBytes uint64
	StoredBytes  int64
	// OnDiskBytes is what the stores that could say take on disk, as du
	// counts it (block files, their directories, quarantined copies).
	OnDiskBytes int64
	Blocks      int64
	Servers     []ServerStatus
	Replicas    int    // the cluster's default replication factor
	Epoch       uint64 // of the block-server map
	Mover       meta.MoverProgress
	// View is the cluster as its meta processes describe it (nil without
	// Cluster.Describe); Sites groups servers and metas by site.
	View  *ClusterView
	Sites []SiteStatus
}

// ServerStatus is one block server's line.
type ServerStatus struct {
	meta.Server
	Blocks, Bytes int64
	Err           error
	// Scrub is the server's scrub progress; nil when it runs none (or
	// cannot say).
	Scrub *scrub.Progress
	// Free and Size are the free and total bytes of the file system the
	// server stores on, when HasSpace (block.Spacer).
	Free, Size int64
	HasSpace   bool
	// OnDisk is what the server's store takes on disk, when HasOnDisk
	// (block.SpaceReporter).
	OnDisk    int64
	HasOnDisk bool
}

// ScrubReporter is the optional capability of a BlockServer to report its
// scrub (the block client has it: GET /v1/scrub).
type ScrubReporter interface {
	Scrub(ctx context.Context) (scrub.Progress, error)
}

// Status gathers file-system and per-server usage.
func Status(ctx context.Context, c *Cluster) (StatusReport, error) {
	var r StatusReport
	st, err := c.Meta.StatFS(ctx)
	if err != nil {
		return r, fmt.Errorf("statfs: %w", err)
	}
	r.Files, r.LogicalBytes = st.Files, st.LogicalBytes
	m, err := c.Meta.Servers(ctx)
	if err != nil {
		return r, fmt.Errorf("block-server map: %w", err)
	}
	r.Replicas, r.Epoch = m.Replicas, m.Epoch
	if r.Mover, err = c.Meta.MoverProgress(ctx); err != nil {
		return r, err
	}
	stores, err := c.dialAll(m)
	if err != nil {
		return r, err
	}
	for _, s := range m.Servers {
		ss := ServerStatus{Server: s}
		if s.State == meta.StateDown {
			r.Servers = append(r.Servers, ss) // not asked: it stopped answering
			continue
		}
		ss.Blocks, ss.Bytes, ss.Err = stores[s.ID].Usage(ctx)
		if ss.Err == nil {
			r.Blocks += ss.Blocks
			r.StoredBytes += ss.Bytes
		}
		if ss.Err == nil {
			space(ctx, stores[s.ID], &ss)
			if ss.HasOnDisk {
				r.OnDiskBytes += ss.OnDisk
			}
		}
		if sr, ok := stores[s.ID].(ScrubReporter); ok && ss.Err == nil {
			if p, err := sr.Scrub(ctx); err == nil {
				ss.Scrub = &p
			}
		}
		r.Servers = append(r.Servers, ss)
	}
	c.describe(ctx, &r)
	return r, nil
}

// Print writes r as `key: value` lines.
func (r StatusReport) Print(w io.Writer) {
	up, serving := 0, 0
	var scrubbed, scrubbedBytes, corrupt int64
	scrubbing := 0
	var rounds uint64
	for _, s := range r.Servers {
		if s.Err == nil && s.State != "down" {
			up++
		}
		if s.State != meta.StateDown {
			serving++
		}
		if p := s.Scrub; p != nil {
			if scrubbing == 0 || p.Rounds < rounds {
				rounds = p.Rounds
			}
			scrubbing++
			scrubbed += p.Blocks
			scrubbedBytes += p.Bytes
			corrupt += p.Corrupt
		}
	}
	r.printCluster(w)
	fmt.Fprintf(w, "files: %d\n", r.Files)
	fmt.Fprintf(w, "logical bytes: %d\n", r.LogicalBytes)
	fmt.Fprintf(w, "stored block bytes: %d\n", r.StoredBytes)
	fmt.Fprintf(w, "bytes on disk: %d\n", r.OnDiskBytes)
	fmt.Fprintf(w, "blocks: %d\n", r.Blocks)
	fmt.Fprintf(w, "servers: %d (%d up)\n", len(r.Servers), up)
	fmt.Fprintf(w, "replicas: %d\n", r.Replicas)
	if r.Replicas > serving {
		fmt.Fprintf(w, "warning: the replication factor %d is more than the %d block servers not down: "+
			"every block stays under-replicated (add servers, or tessera meta --replicas N)\n", r.Replicas, serving)
	}
	fmt.Fprintf(w, "epoch: %d\n", r.Epoch)
	fmt.Fprintf(w, "under-replicated: %d\n", r.Mover.UnderReplicated)
	fmt.Fprintf(w, "misplaced: %d\n", r.Mover.Misplaced)
	fmt.Fprintf(w, "bytes to move: %d\n", r.Mover.BytesToMove)
	fmt.Fprintf(w, "mover rounds: %d\n", r.Mover.Round)
	fmt.Fprintf(w, "lost: %d\n", r.Mover.Lost)
	for _, l := range r.Mover.LostBlocks {
		fmt.Fprintf(w, "lost block %s: no good copy on any server up; inodes %s\n", l.Hash, inoList(l.Inos))
	}
	if n := r.Mover.Lost - int64(len(r.Mover.LostBlocks)); n > 0 {
		fmt.Fprintf(w, "lost blocks not listed: %d (tessera fsck names them all)\n", n)
	}
	if scrubbing > 0 {
		fmt.Fprintf(w, "scrub rounds: %d\n", rounds)
		fmt.Fprintf(w, "scrubbed blocks: %d\n", scrubbed)
		fmt.Fprintf(w, "scrubbed bytes: %d\n", scrubbedBytes)
		fmt.Fprintf(w, "corrupt copies found: %d\n", corrupt)
	}
	if r.Mover.Running {
		fmt.Fprintf(w, "mover: running, %d bytes moved this round\n", r.Mover.BytesMoved)
	}
	if r.Mover.Err != "" {
		fmt.Fprintf(w, "mover error: %s\n", r.Mover.Err)
	}
	for _, s := range r.Servers {
		state := s.State
		if s.Err != nil {
			state = "unreachable: " + s.Err.Error()
		}
		fmt.Fprintf(w, "server %s: addr=%s state=%s blocks=%d bytes=%d", s.ID, s.Addr, state, s.Blocks, s.Bytes)
		if s.HasOnDisk {
			fmt.Fprintf(w, " on_disk=%d", s.OnDisk)
		}
		if s.Site != "" {
			fmt.Fprintf(w, " site=%s", s.Site)
		}
		if p := s.Scrub; p != nil {
			fmt.Fprintf(w, " scrub_rounds=%d scrub_blocks=%d scrub_bytes=%d scrub_corrupt=%d scrub_running=%t",
				p.Rounds, p.Blocks, p.Bytes, p.Corrupt, p.Running)
		}
		fmt.Fprintln(w)
	}
}

// space fills in ss's free, size and on-disk bytes from bs, as far as it
// can tell them (block.SpaceReporter, else block.Spacer).
func space(ctx context.Context, bs BlockServer, ss *ServerStatus) {
	if sr, ok := bs.(block.SpaceReporter); ok {
		if sp, err := sr.SpaceInfo(ctx); err == nil {
			ss.Free, ss.Size, ss.HasSpace = sp.Free, sp.Size, true
			ss.OnDisk, ss.HasOnDisk = sp.OnDisk, sp.OnDisk >= 0
			return
		}
	}
	if sp, ok := bs.(block.Spacer); ok {
		if free, size, err := sp.Space(ctx); err == nil {
			ss.Free, ss.Size, ss.HasSpace = free, size, true
		}
	}
}

// inoList writes inode numbers as "12 15 (find MNT -inum N)".
func inoList(inos []meta.Ino) string {
	if len(inos) == 0 {
		return "none (no file names it any more)"
	}
	var b []byte
	for i, ino := range inos {
		if i > 0 {
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, "%d", ino)
	}
	return string(b) + " (find MOUNT -inum N)"
}

// liveBlocks returns every block some recipe refers to; op names the
// operation in the progress reports of the walk.
func (c *Cluster) liveBlocks(ctx context.Context, op string) (map[block.Hash]struct{}, error) {
	live := make(map[block.Hash]struct{})
	var n int64
	c.report(Progress{Op: op, Phase: "walk"})
	err := c.Meta.WalkBlocks(ctx, func(_ meta.Ino, _ uint64, h block.Hash) error {
		live[h] = struct{}{}
		if n++; n%walkEvery == 0 {
			c.report(Progress{Op: op, Phase: "walk", Done: n})
		}
		return nil
	})
	c.report(Progress{Op: op, Phase: "walk", Done: n, Total: n})
	if err != nil {
		return nil, fmt.Errorf("walk recipes: %w", err)
	}
	return live, nil
}

// GCReport says what a collection removed.
type GCReport struct {
	Live            int
	Scanned         int64
	Removed         int64
	RemovedBytes    int64
	KeptYoung       int64 // unreferenced but within the grace period
	ReleasesDropped int   // releases older than the cutoff, done by this walk
	UnreachableErr  []error
}

// ReleaseDropper is the optional capability of the meta service to drop
// the releases (see package reclaim) a complete collection made redundant
// (*meta.Service has it; over RPC the log is left to the meta role).
type ReleaseDropper interface {
	DropReleasesBefore(ctx context.Context, before int64) (int, error)
}

var _ ReleaseDropper = (*meta.Service)(nil)

// GC removes blocks no recipe refers to whose latest Put is older than
// grace. Blocks being written are younger than the grace period (every Put
// refreshes a block's age), so they are never removed while the grace period
// is longer than the longest write between a block's upload and its commit.
func GC(ctx context.Context, c *Cluster, grace time.Duration, now time.Time) (GCReport, error) {
	var r GCReport
	live, err := c.liveBlocks(ctx, "gc")
	if err != nil {
		return r, err
	}
	r.Live = len(live)
	notAfter := now.Add(-grace).UnixNano()
	list, stores, err := c.servers(ctx)
	if err != nil {
		return r, err
	}
	scan := Progress{Op: "gc", Phase: "scan"}
	for _, s := range list {
		// The servers' usage sizes the scan for the progress bar; a
		// server that cannot say leaves the total short, not wrong.
		if n, b, err := stores[s.ID].Usage(ctx); err == nil {
			scan.Total += n
			scan.TotalBytes += b
		}
	}
	c.report(scan)
	// Scan every server, then remove: the progress shows one scan and
	// one removal, each with its own total.
	dead := make(map[string][]block.Info)
	rm := Progress{Op: "gc", Phase: "remove"}
	for _, s := range list {
		err := stores[s.ID].List(ctx, func(info block.Info) error {
			r.Scanned++
			scan.Done++
			scan.Bytes += info.Size
			scan.Total, scan.TotalBytes = max(scan.Total, scan.Done), max(scan.TotalBytes, scan.Bytes)
			c.report(scan)
			if _, ok := live[info.Hash]; ok {
				return nil
			}
			if info.ModTime > notAfter {
				r.KeptYoung++
				return nil
			}
			dead[s.ID] = append(dead[s.ID], info)
			return nil
		})
		if err != nil {
			r.UnreachableErr = append(r.UnreachableErr, fmt.Errorf("list server %s: %w", s.ID, err))
			delete(dead, s.ID) // what it listed before failing is not known to be all
			continue
		}
	}
	for _, infos := range dead {
		for _, info := range infos {
			rm.Total++
			rm.TotalBytes += info.Size
		}
	}
	for _, s := range list {
		for _, info := range dead[s.ID] {
			c.report(rm)
			rm.Done++
			rm.Bytes += info.Size
			removed, err := stores[s.ID].Remove(ctx, info.Hash, notAfter)
			if err != nil {
				r.UnreachableErr = append(r.UnreachableErr, fmt.Errorf("remove %s from %s: %w", info.Hash.Short(), s.ID, err))
				continue
			}
			if removed {
				r.Removed++
				r.RemovedBytes += info.Size
			}
		}
	}
	if rm.Total > 0 {
		c.report(rm)
	}
	if rd, ok := c.Meta.(ReleaseDropper); ok && len(r.UnreachableErr) == 0 {
		// Every unreferenced copy older than the cutoff is gone, which
		// is all a release before the cutoff asks for.
		n, err := rd.DropReleasesBefore(ctx, notAfter)
		r.ReleasesDropped = n
		if err != nil {
			return r, err
		}
	}
	return r, errors.Join(r.UnreachableErr...)
}
