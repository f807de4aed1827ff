package gateway

import (
	"context"
	"errors"

	"tessera/internal/meta"
)

// errNoSettings: no member of the group has a meta client that reads
// fileset settings.
var errNoSettings = errors.New("no gateway of the group reads fileset settings")

// Fileset returns the settings of the fileset rooted at root, read through
// the meta client of a gateway in this process (meta.FilesetAPI): a mount
// asks it for the mode, to refuse updates in a read-only fileset before
// anything is fetched.
func (g *Group) Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	for _, m := range g.gs {
		if in, ok := m.(*Ingester); ok {
			if fa, ok := in.meta.(meta.FilesetAPI); ok {
				return fa.Fileset(ctx, root)
			}
		}
	}
	return meta.Fileset{}, errNoSettings
}
