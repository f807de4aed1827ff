package statuspage

import (
	"context"
	"fmt"
	"time"

	"tessera/internal/admin"
	"tessera/internal/block"
	"tessera/internal/meta"
)

// Snapshot is what the page shows, and /status.json returns.
type Snapshot struct {
	Time  time.Time `json:"time"`
	Error string    `json:"error,omitempty"` // the cluster could not be read (the rest is empty)

	// Cluster is the cluster's name, its meta processes and its store's
	// members; Sites groups block servers and metas by site.
	Cluster *admin.ClusterView `json:"cluster,omitempty"`
	Sites   []admin.SiteStatus `json:"sites,omitempty"`

	Files        uint64 `json:"files"`
	LogicalBytes uint64 `json:"logical_bytes"`
	Replicas     int    `json:"replicas"` // the cluster's default replication factor
	Epoch        uint64 `json:"epoch"`    // of the block-server map

	Servers  []Server `json:"servers"`
	Capacity Capacity `json:"capacity"`
	Health   Health   `json:"health"`
	Mover    Mover    `json:"mover"`

	Throughput Throughput `json:"throughput"`
	// Errors are the latest warnings and errors the meta role logged,
	// newest first; ErrorsTotal counts all since it started.
	Errors      []Record `json:"errors"`
	ErrorsTotal uint64   `json:"errors_total"`
	// Refused counts the refused callers (connections, calls) by reason
	// since it started; the page needs no credentials, so who they were
	// (addresses, identities, roots) is only in the log.
	Refused []Refusals `json:"refused"`
}

// Server is one block server's row.
type Server struct {
	ID    string `json:"id"`
	Addr  string `json:"addr"`
	Host  string `json:"host,omitempty"`
	Rack  string `json:"rack,omitempty"`
	Site  string `json:"site,omitempty"`
	State string `json:"state"` // up, draining, down
	// SeenAgo is the time since its latest heartbeat, in seconds.
	SeenAgo float64 `json:"seen_ago_seconds"`
	Blocks  int64   `json:"blocks"`
	Bytes   int64   `json:"bytes"`
	// Free and Size are the free and total bytes of the file system the
	// server stores on; nil when it does not say.
	Free *int64 `json:"free,omitempty"`
	Size *int64 `json:"size,omitempty"`
	// OnDisk is what its store takes on disk (du); nil when it does not
	// say.
	OnDisk *int64 `json:"on_disk,omitempty"`
	// Err is why its usage could not be read ("" when it was, or when
	// it is down and was not asked).
	Err   string `json:"error,omitempty"`
	Scrub *Scrub `json:"scrub,omitempty"`
}

// Scrub is a server's background verification.
type Scrub struct {
	Rounds  uint64 `json:"rounds"`
	Blocks  int64  `json:"blocks"`
	Bytes   int64  `json:"bytes"`
	Corrupt int64  `json:"corrupt"`
	Running bool   `json:"running"`
}

// Capacity is what the cluster stores and the room it has left.
type Capacity struct {
	StoredBytes  int64 `json:"stored_bytes"`  // on the servers that answered
	StoredBlocks int64 `json:"stored_blocks"` // copies
	// Reporting counts the servers whose usage is in the sums.
	Reporting int `json:"servers_reporting"`
	// FreeBytes and SizeBytes sum the free and total bytes of the file
	// systems of the SpaceReporting servers. Servers that share a file
	// system (those of `tessera up` on one data directory) count it once
	// each.
	FreeBytes      int64 `json:"free_bytes"`
	SizeBytes      int64 `json:"size_bytes"`
	SpaceReporting int   `json:"servers_reporting_space"`
	// OnDiskBytes sums what the stores of the OnDiskReporting servers
	// take on disk (du: block files, their directories, quarantine).
	OnDiskBytes     int64 `json:"on_disk_bytes"`
	OnDiskReporting int   `json:"servers_reporting_on_disk"`
}

// Health is the replication health, from the mover's latest round.
type Health struct {
	UnderReplicated int64       `json:"under_replicated"`
	Misplaced       int64       `json:"misplaced"`
	Lost            int64       `json:"lost"`
	LostBlocks      []LostBlock `json:"lost_blocks,omitempty"`
	// Warning is set when the replication factor exceeds the servers not
	// down, so that every block stays under-replicated.
	Warning string `json:"warning,omitempty"`
}

// LostBlock is a block no server holds a good copy of, with the inodes of
// its files.
type LostBlock struct {
	Hash string     `json:"hash"`
	Inos []meta.Ino `json:"inodes"`
}

// Mover is the mover's latest report.
type Mover struct {
	Round       uint64    `json:"rounds"`
	Running     bool      `json:"running"`
	At          time.Time `json:"at,omitzero"` // of the report; zero before the first
	Blocks      int64     `json:"blocks"`      // live blocks seen in the last round
	BytesToMove int64     `json:"bytes_to_move"`
	BytesMoved  int64     `json:"bytes_moved"` // in the round under way
	Err         string    `json:"error,omitempty"`
}

// gather reads the cluster through admin.Status.
func gather(ctx context.Context, c *admin.Cluster, now time.Time) (Snapshot, sample) {
	r, err := admin.Status(ctx, c)
	if err != nil {
		return Snapshot{Time: now, Error: err.Error()}, sample{}
	}
	s := FromReport(r, now)
	smp := sample{at: now, logical: int64(r.LogicalBytes), stored: s.Capacity.StoredBytes, storedOK: true}
	for _, ss := range r.Servers {
		if ss.Err != nil || ss.State == meta.StateDown {
			smp.storedOK = false
		}
	}
	return s, smp
}

// FromReport is the Snapshot of a status report taken at now: what the
// page shows, /status.json returns and `tessera status --json` prints
// (Throughput and Errors are the page's own and stay empty).
func FromReport(r admin.StatusReport, now time.Time) Snapshot {
	s := Snapshot{Time: now, Cluster: r.View, Sites: r.Sites}
	s.Files, s.LogicalBytes, s.Replicas, s.Epoch = r.Files, r.LogicalBytes, r.Replicas, r.Epoch
	serving := 0
	for _, ss := range r.Servers {
		row := Server{ID: ss.ID, Addr: ss.Addr, Host: ss.Host, Rack: ss.Rack, Site: ss.Site, State: ss.State,
			SeenAgo: now.Sub(time.Unix(0, ss.Seen)).Seconds(), Blocks: ss.Blocks, Bytes: ss.Bytes}
		if ss.State != meta.StateDown {
			serving++
		}
		switch {
		case ss.Err != nil:
			row.Err = ss.Err.Error()
		case ss.State == meta.StateDown:
		default:
			s.Capacity.Reporting++
			s.Capacity.StoredBytes += ss.Bytes
			s.Capacity.StoredBlocks += ss.Blocks
		}
		if ss.HasSpace {
			free, size := ss.Free, ss.Size
			row.Free, row.Size = &free, &size
			s.Capacity.FreeBytes += free
			s.Capacity.SizeBytes += size
			s.Capacity.SpaceReporting++
		}
		if ss.HasOnDisk {
			onDisk := ss.OnDisk
			row.OnDisk = &onDisk
			s.Capacity.OnDiskBytes += onDisk
			s.Capacity.OnDiskReporting++
		}
		if p := ss.Scrub; p != nil {
			row.Scrub = &Scrub{Rounds: p.Rounds, Blocks: p.Blocks, Bytes: p.Bytes, Corrupt: p.Corrupt, Running: p.Running}
		}
		s.Servers = append(s.Servers, row)
	}
	m := r.Mover
	s.Health = Health{UnderReplicated: m.UnderReplicated, Misplaced: m.Misplaced, Lost: m.Lost}
	for _, l := range m.LostBlocks {
		s.Health.LostBlocks = append(s.Health.LostBlocks, LostBlock{Hash: block.Hash(l.Hash).String(), Inos: l.Inos})
	}
	if r.Replicas > serving {
		s.Health.Warning = fmt.Sprintf("the replication factor %d is more than the %d block servers not down: "+
			"every block stays under-replicated", r.Replicas, serving)
	}
	s.Mover = Mover{Round: m.Round, Running: m.Running, Blocks: m.Blocks, BytesToMove: m.BytesToMove,
		BytesMoved: m.BytesMoved, Err: m.Err}
	if m.At != 0 {
		s.Mover.At = time.Unix(0, m.At)
	}
	return s
}
