package gateway

import (
	"context"
	"errors"

	"tessera/internal/meta"
)

// errNoReadCounts: no member of the group has a meta client taking read
// counts.
var errNoReadCounts = errors.New("no gateway of the group takes fileset read counts")

// AddFilesetReads passes a mount's read counts of a fileset to the meta
// service through the meta client of a gateway in this process
// (meta.FilesetReadsAPI; the hit ratio of `tessera fileset status`).
func (g *Group) AddFilesetReads(ctx context.Context, root meta.Ino, d meta.FilesetReads) error {
	for _, m := range g.gs {
		if in, ok := m.(*Ingester); ok {
			if ra, ok := in.meta.(meta.FilesetReadsAPI); ok {
				return ra.AddFilesetReads(ctx, root, d)
			}
		}
	}
	return errNoReadCounts
}
