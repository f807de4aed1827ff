package gateway

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// Names gone at home (Panache §5.3/§5.4). When revalidation finds that a
// directory changed at home, the names the cache lists there and home no
// longer has are removed from the cache: in a read-only fileset all of
// them; otherwise only the clean ones (meta.RemoveVanished decides in the
// removal's transaction): a name with queued write-back, one made locally
// and not yet at home, or a file changed locally stays, and so does a
// directory holding any such. A file open somewhere keeps working as an
// orphan, as after any unlink.

// vanishRemover is the meta call that removes a vanished name
// (meta.VanishAPI: the service in process, the RPC client over the wire).
type vanishRemover = meta.VanishAPI

// dropVanished removes from cached directory dir the names home's
// directory homePath no longer lists (those the meta service finds clean,
// or all in a read-only fileset). It
// returns how many names it removed (entries under removed directories
// included).
func (g *Ingester) dropVanished(ctx context.Context, st home.Store, dir meta.Ino, homePath string) (int, error) {
	vr, ok := g.meta.(vanishRemover)
	if !ok {
		return 0, nil
	}
	ents, err := st.ReadDir(ctx, homePath)
	if err != nil {
		return 0, fmt.Errorf("list %q at home: %w", homePath, err)
	}
	atHome := make(map[string]bool, len(ents))
	for _, e := range ents {
		atHome[e.Name] = true
	}
	cached, err := g.children(ctx, dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range cached {
		if atHome[e.Name] {
			continue
		}
		n, err := g.removeVanished(ctx, vr, dir, e)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// children lists directory dir in the cache, whole.
func (g *Ingester) children(ctx context.Context, dir meta.Ino) ([]meta.DirEntry, error) {
	var out []meta.DirEntry
	after := ""
	for {
		ents, more, err := g.meta.ReadDir(ctx, dir, after, 1024, false)
		if err != nil {
			return out, fmt.Errorf("list directory %d: %w", dir, err)
		}
		out = append(out, ents...)
		if !more || len(ents) == 0 {
			return out, nil
		}
		after = ents[len(ents)-1].Name
	}
}

// removeVanished removes entry e of dir, a directory with what it holds,
// as far as it is clean (see the comment at the top); what is not stays.
func (g *Ingester) removeVanished(ctx context.Context, vr vanishRemover, dir meta.Ino, e meta.DirEntry) (int, error) {
	isDir := e.Mode&syscall.S_IFMT == syscall.S_IFDIR
	removed := 0
	if isDir {
		kids, err := g.children(ctx, e.Ino)
		if err != nil {
			return 0, err
		}
		for _, k := range kids {
			n, err := g.removeVanished(ctx, vr, e.Ino, k)
			removed += n
			if err != nil {
				return removed, err
			}
		}
	}
	err := vr.RemoveVanished(ctx, dir, e.Name, e.Ino, isDir)
	switch {
	case err == nil:
		removed++
	case errors.Is(err, meta.ErrDirty), errors.Is(err, meta.ErrNotEmpty), errors.Is(err, meta.ErrNotFound), errors.Is(err, meta.ErrConflict):
		// Local changes, kept; or changed in the cache meanwhile.
	default:
		return removed, fmt.Errorf("remove %q, gone at home: %w", e.Name, err)
	}
	return removed, nil
}
