package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// Revalidation (Panache §5.4): what was read from home is trusted for the
// fileset's validity lag; after it, the object's home attributes (mtime,
// size, ctime, change token) are compared with those the inode recorded,
// and only an object that changed is invalidated: a file loses its cached
// bytes and becomes a placeholder of home's new size, a directory becomes
// a placeholder to be listed again (new names are added) and loses the
// names home no longer has, as far as they are clean (vanish.go). Time is the Ingester's
// clock (Options.Now), so tests control it.

// Revalidable reports whether inode ino (gateway section sec, in fileset
// f) is ever compared with home: not if it was made locally (no home
// path) nor in a single-writer fileset (home changes only through the
// cache).
func Revalidable(ino meta.Ino, sec *meta.GatewayInfo, f meta.Fileset) bool {
	return f.Mode != meta.ModeSW && (sec.HomePath != "" || ino == sec.Fileset)
}

// RevalidationDue reports whether ino is Revalidable and the fileset's
// validity lag has passed at now since it was last validated. Mounts ask
// it before calling a gateway (gwrpc.Router.Due); Revalidate applies it
// unless forced.
func RevalidationDue(ino meta.Ino, sec *meta.GatewayInfo, f meta.Fileset, now time.Time) bool {
	return Revalidable(ino, sec, f) && now.Sub(time.Unix(0, sec.Validated)) >= f.ValidityLag
}

// Due reports whether inode in, as a mount just read it, is due for
// revalidation at the Ingester's clock (RevalidationDue with its
// fileset's settings); true when the settings cannot be read, and
// Revalidate then decides. A mount asks it first (fuse's dueChecker,
// through Group.Due), so that it knows when an open waits for home.
func (g *Ingester) Due(ctx context.Context, in *meta.Inode) bool {
	if in == nil || in.Gateway == nil {
		return true
	}
	f, err := g.meta.Fileset(ctx, in.Gateway.Fileset)
	if err != nil {
		return true
	}
	return RevalidationDue(in.Ino, in.Gateway, f, g.now())
}

// Revalidate compares inode ino with home when its validity lag has
// passed (or always, with force) and invalidates it if home changed. It
// reports whether it invalidated. Inodes made locally (no home path) and
// single-writer filesets (home changes only through the cache) are never
// invalidated.
func (g *Ingester) Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error) {
	// Its changes bring home's state in: not local updates to write
	// back, and allowed in a read-only fileset.
	ctx = meta.WithoutWriteback(ctx)
	in, err := g.meta.GetAttr(ctx, ino)
	if err != nil {
		return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
	}
	sec, err := section(in)
	if err != nil {
		return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
	}
	f, err := g.meta.Fileset(ctx, sec.Fileset)
	if err != nil {
		return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
	}
	now := g.now()
	if !Revalidable(ino, sec, f) || (!force && !RevalidationDue(ino, sec, f, now)) {
		return false, nil
	}
	st, err := g.store(ctx, sec.Fileset)
	if err != nil {
		return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
	}
	a, err := statAs(ctx, st, sec.HomePath, in)
	if errors.Is(err, home.ErrNotFound) {
		// Gone at home: the revalidation of its directory removes the
		// name (vanish.go); until then the cached copy is served.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("revalidate inode %d (%q): %w", ino, sec.HomePath, err)
	}
	next := *sec
	next.Validated = now.UnixNano()
	if same(sec, a) {
		_, err := g.meta.SetGateway(ctx, ino, next, in.Change)
		if err != nil {
			return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
		}
		return false, nil
	}
	e, _ := homeEntry(a)
	next.HomeMtime, next.HomeCtime, next.HomeSize, next.Token = e.HomeMtime, e.HomeCtime, e.Size, e.Token
	next.State, next.Cached = meta.CachePlaceholder, nil // its runs went with its bytes
	cur := in
	if in.IsDir() {
		// Names home no longer has leave the cache (vanish.go); the
		// directory's record changed with them.
		if _, err := g.dropVanished(ctx, st, ino, sec.HomePath); err != nil {
			return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
		}
		if cur, err = g.meta.GetAttr(ctx, ino); err != nil {
			return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
		}
	}
	if in.IsRegular() {
		// Drop the cached bytes (their blocks' references go with
		// them), then take home's size and times.
		if cur, err = g.meta.SetAttr(ctx, ino, meta.SetAttrReq{Valid: meta.SetSize}); err == nil {
			req := meta.SetAttrReq{Valid: meta.SetSize, Size: e.Size}
			if e.HomeMtime != 0 {
				req.Valid |= meta.SetMtime | meta.SetAtime
				req.Mtime, req.Atime = e.HomeMtime, e.HomeMtime
			}
			cur, err = g.meta.SetAttr(ctx, ino, req)
		}
		if err != nil {
			return false, fmt.Errorf("revalidate inode %d: invalidate: %w", ino, err)
		}
		if e.Size == 0 {
			next.State = meta.CacheCached
		}
	}
	if _, err := g.meta.SetGateway(ctx, ino, next, cur.Change); err != nil {
		return false, fmt.Errorf("revalidate inode %d: %w", ino, err)
	}
	return true, nil
}

// statAs is st.Stat of p, the home path of inode in: where the store can
// use what in is (home.KindStater), a directory is asked for as one (on
// s3://, one request for a directory with a marker rather than two).
func statAs(ctx context.Context, st home.Store, p string, in meta.Inode) (home.Attr, error) {
	if ks, ok := st.(home.KindStater); ok && in.IsDir() {
		return ks.StatKind(ctx, p, home.KindDir)
	}
	return st.Stat(ctx, p)
}

// same reports whether home's attributes a are those sec recorded.
func same(sec *meta.GatewayInfo, a home.Attr) bool {
	e, _ := homeEntry(a)
	if e.Token != "" || sec.Token != "" {
		return e.Token == sec.Token
	}
	return e.HomeMtime == sec.HomeMtime && e.HomeCtime == sec.HomeCtime && (a.Kind == home.KindDir || e.Size == sec.HomeSize)
}

// RevalidateTree forces the revalidation of ino and, for a directory,
// of everything under it that was listed; it returns how many inodes were
// checked and how many invalidated (`tessera fileset revalidate PATH`).
func (g *Ingester) RevalidateTree(ctx context.Context, ino meta.Ino) (checked, invalidated int, err error) {
	queue := []meta.Ino{ino}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		in, err := g.meta.GetAttr(ctx, cur)
		if err != nil {
			return checked, invalidated, fmt.Errorf("revalidate inode %d: %w", cur, err)
		}
		// A directory's children are read before it is revalidated: one
		// that changed is relisted by its next lookup, and what it held
		// is checked now.
		if in.IsDir() && in.Gateway != nil && in.Gateway.State == meta.CacheCached {
			after := ""
			for {
				ents, more, err := g.meta.ReadDir(ctx, cur, after, 1024, false)
				if err != nil {
					return checked, invalidated, fmt.Errorf("revalidate: list directory %d: %w", cur, err)
				}
				for _, e := range ents {
					queue = append(queue, e.Ino)
					after = e.Name
				}
				if !more || len(ents) == 0 {
					break
				}
			}
		}
		if in.Gateway == nil {
			continue
		}
		changed, err := g.Revalidate(ctx, cur, true)
		if err != nil {
			return checked, invalidated, err
		}
		checked++
		if changed {
			invalidated++
		}
	}
	return checked, invalidated, nil
}
