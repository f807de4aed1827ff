package gateway

import (
	"context"
	"errors"
	"fmt"
	"path"

	"tessera/internal/meta"
)

// Operator walks over a fileset's cached tree (tessera fileset evict and
// status). They need only the meta service: home is not asked.

// TreeMeta is what the walks need of the meta service.
type TreeMeta interface {
	ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error)
}

// walkTree calls fn for every entry under directory dir (depth first,
// with its path relative to dir) until fn fails or limit entries were
// seen (limit <= 0: no limit); it reports whether it stopped at the limit.
func walkTree(ctx context.Context, m TreeMeta, dir meta.Ino, limit int, fn func(p string, in meta.Inode) error) (bool, error) {
	type item struct {
		ino meta.Ino
		p   string
	}
	stack := []item{{dir, ""}}
	seen := 0
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		after := ""
		for {
			ents, more, err := m.ReadDir(ctx, cur.ino, after, 1024, true)
			if err != nil {
				return false, fmt.Errorf("list %q: %w", cur.p, err)
			}
			for _, e := range ents {
				after = e.Name
				if e.Inode == nil {
					continue // gone between the listing and its attributes
				}
				if seen++; limit > 0 && seen > limit {
					return true, nil
				}
				p := path.Join(cur.p, e.Name)
				if err := fn(p, *e.Inode); err != nil {
					return false, err
				}
				if e.Inode.IsDir() {
					stack = append(stack, item{e.Ino, p})
				}
			}
			if !more || len(ents) == 0 {
				break
			}
		}
	}
	return false, nil
}

// EvictResult is what EvictTree did.
type EvictResult struct {
	Files int   // files whose data was dropped
	Bytes int64 // their sizes
	// Dirty are the files kept because the cache has changes of them
	// (queued write-back, or changed locally), with why.
	Dirty []string
}

// EvictTree drops the cached data of every file under fileset directory
// dir (meta.EvictAPI.EvictData: they become placeholders of home's size;
// their blocks go to the normal reclamation) and reports the files it
// kept because the cache has changes of them. Files made in the cache and
// placeholders are passed over. progress, when set, is called after each
// file with how many of the candidates were handled.
func EvictTree(ctx context.Context, m interface {
	TreeMeta
	meta.EvictAPI
}, dir meta.Ino, progress func(done, total int)) (EvictResult, error) {
	type cand struct {
		ino  meta.Ino
		p    string
		size int64
	}
	var cands []cand
	_, err := walkTree(ctx, m, dir, 0, func(p string, in meta.Inode) error {
		if g := in.Gateway; in.IsRegular() && g != nil && g.HomePath != "" && g.State != meta.CachePlaceholder {
			cands = append(cands, cand{in.Ino, p, int64(in.Size)})
		}
		return nil
	})
	var res EvictResult
	if err != nil {
		return res, fmt.Errorf("evict: %w", err)
	}
	for i, c := range cands {
		_, err := m.EvictData(ctx, c.ino)
		switch {
		case err == nil:
			res.Files++
			res.Bytes += c.size
		case errors.Is(err, meta.ErrDirty):
			res.Dirty = append(res.Dirty, fmt.Sprintf("%s: %v", c.p, err))
		case errors.Is(err, meta.ErrNotFound), errors.Is(err, meta.ErrInvalid):
			// Removed, or replaced by a local file, since the walk.
		default:
			return res, fmt.Errorf("evict %s: %w", c.p, err)
		}
		if progress != nil {
			progress(i+1, len(cands))
		}
	}
	return res, nil
}

// CacheUsage is what a fileset holds in the cache (tessera fileset status).
type CacheUsage struct {
	// Bytes is the size of the files held whole: fetched from home or
	// made in the cache.
	Bytes int64
	// Files held whole, Partial files of which some ranges are held, and
	// Placeholders holding none.
	Files, Partial, Placeholders int
	// Truncated: the walk stopped at its limit; the figures are lower
	// bounds.
	Truncated bool
}

// CachedBytes walks fileset directory dir (at most limit entries; <= 0:
// all) and sums what the cache holds of it. A bounded scan rather than
// counters kept in the ingest's transactions: exact without touching the
// data path, and status is rare.
func CachedBytes(ctx context.Context, m TreeMeta, dir meta.Ino, limit int) (CacheUsage, error) {
	var u CacheUsage
	trunc, err := walkTree(ctx, m, dir, limit, func(p string, in meta.Inode) error {
		if !in.IsRegular() {
			return nil
		}
		switch g := in.Gateway; {
		case g == nil || g.State == meta.CacheCached:
			u.Files++
			u.Bytes += int64(in.Size)
		case g.State == meta.CachePartial:
			u.Partial++
		default:
			u.Placeholders++
		}
		return nil
	})
	u.Truncated = trunc
	if err != nil {
		return u, fmt.Errorf("cache usage: %w", err)
	}
	return u, nil
}
