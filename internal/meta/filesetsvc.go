package meta

import (
	"context"
	"errors"
	"fmt"
	"path"
	"syscall"

	"tessera/internal/kv"
)

// FilesetAPI is the part of the service that filesets and gateways use
// (docs/design/2026-11-24-gateway.md). Service implements it; so does the
// RPC client.
type FilesetAPI interface {
	// CreateFileset makes the empty directory f.Root the root of a
	// fileset caching f.Home; it returns f with defaults filled in.
	//tessera:authz admin cluster logged
	CreateFileset(ctx context.Context, f Fileset) (Fileset, error)
	// Fileset returns the fileset rooted at root (ErrNotFound if none).
	//tessera:authz read cluster
	//tessera:rpc GetFileset
	Fileset(ctx context.Context, root Ino) (Fileset, error)
	// Filesets lists every fileset, by root.
	//tessera:authz read cluster
	Filesets(ctx context.Context) ([]Fileset, error)
	// DeleteFileset detaches the fileset rooted at root: what it cached
	// stays as ordinary files and directories.
	//tessera:authz admin cluster logged
	DeleteFileset(ctx context.Context, root Ino) error
	// IngestDir adds placeholders for the entries a gateway listed at
	// home in the fileset directory dir (see IngestDirReq).
	//tessera:authz cache cluster
	IngestDir(ctx context.Context, req IngestDirReq) (Inode, error)
	// SetGateway replaces the gateway section of inode ino with gateway, only if
	// the inode's Change is still ifChange (0: whatever it is); otherwise
	// ErrConflict, so that an ingest never clobbers a local update.
	//tessera:authz cache cluster
	SetGateway(ctx context.Context, ino Ino, gateway GatewayInfo, ifChange uint64) (Inode, error)
}

// HomeEntry is an entry of a home directory as a gateway hands it to the
// service: Mode holds the type bits (S_IFREG, S_IFDIR, S_IFLNK) and the
// permission bits (0: the defaults 0644, 0755).
type HomeEntry struct {
	Name                 string
	Mode                 uint32
	Size                 uint64
	HomeMtime, HomeCtime int64
	Token                string
	Target               string // a symlink's target
}

// MaxIngestEntries is the most entries one IngestDir takes; a gateway
// sends a longer listing in several calls, with Done on the last.
const MaxIngestEntries = 1024

// IngestDirReq is a batch of a home directory's listing.
type IngestDirReq struct {
	Dir     Ino
	Entries []HomeEntry
	// Done marks the listing complete: the directory becomes
	// CacheCached, validated at Validated (unix ns).
	Done      bool
	Validated int64
}

// CreateFileset implements FilesetAPI.
func (s *Service) CreateFileset(ctx context.Context, f Fileset) (Fileset, error) {
	if err := f.Normalize(); err != nil {
		return Fileset{}, fmt.Errorf("create fileset at inode %d: %w", f.Root, err)
	}
	err := s.update(ctx, func(t txn) error {
		root, err := t.getDir(f.Root)
		if err != nil {
			return err
		}
		if root.Gateway != nil {
			return fmt.Errorf("inode %d is already in fileset %d: %w", f.Root, root.Gateway.Fileset, ErrExist)
		}
		if empty, err := t.dirEmpty(f.Root); err != nil {
			return err
		} else if !empty {
			return fmt.Errorf("directory %d is not empty: %w", f.Root, ErrNotEmpty)
		}
		now := s.nowNs()
		f.Created = now
		root.Gateway = &GatewayInfo{Fileset: f.Root, State: CachePlaceholder}
		root.Change++
		root.Ctime = now
		if err := t.putInode(root); err != nil {
			return err
		}
		if err := t.setHookFlag(keyFilesetsFlag); err != nil {
			return err
		}
		if err := t.Put(filesetKey(f.Root), encodeFileset(&f)); err != nil {
			return err
		}
		return t.record(edit{kind: editFileset, ino: f.Root, rec: root})
	})
	if err != nil {
		return Fileset{}, fmt.Errorf("create fileset at inode %d: %w", f.Root, err)
	}
	return f, nil
}

// Fileset implements FilesetAPI.
func (s *Service) Fileset(ctx context.Context, root Ino) (Fileset, error) {
	var out Fileset
	err := s.view(ctx, func(t txn) (err error) {
		if out, err = t.getFileset(root); err != nil {
			return err
		}
		out.Reads, err = t.getFilesetReads(root)
		return err
	})
	if err != nil {
		return Fileset{}, fmt.Errorf("fileset %d: %w", root, err)
	}
	return out, nil
}

func (t txn) getFileset(root Ino) (Fileset, error) {
	v, ok, err := t.Get(filesetKey(root))
	if err != nil {
		return Fileset{}, err
	}
	if !ok {
		return Fileset{}, fmt.Errorf("no fileset at inode %d: %w", root, ErrNotFound)
	}
	return decodeFileset(root, v)
}

// Filesets implements FilesetAPI.
func (s *Service) Filesets(ctx context.Context) ([]Fileset, error) {
	var out []Fileset
	err := s.view(ctx, func(t txn) error {
		out = nil
		p := []byte{pfxFileset}
		err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
			root, err := parseFilesetKey(k)
			if err != nil {
				return false, err
			}
			f, err := decodeFileset(root, v)
			if err != nil {
				return false, err
			}
			out = append(out, f)
			return true, nil
		})
		if err != nil {
			return err
		}
		for i := range out { // after the scan: no reads inside its callback
			if out[i].Reads, err = t.getFilesetReads(out[i].Root); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list filesets: %w", err)
	}
	return out, nil
}

// DeleteFileset implements FilesetAPI. Gateway sections left on the
// fileset's other inodes name a fileset that no longer exists, and are
// ignored (clients and gateways look the fileset up).
func (s *Service) DeleteFileset(ctx context.Context, root Ino) error {
	err := s.update(ctx, func(t txn) error {
		if _, err := t.getFileset(root); err != nil {
			return err
		}
		rec, err := t.getInode(root)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if rec != nil && rec.Gateway != nil {
			rec.Gateway = nil
			rec.Change++
			rec.Ctime = s.nowNs()
			if err := t.putInode(rec); err != nil {
				return err
			}
		}
		if err := t.Delete(filesetReadsKey(root)); err != nil {
			return err
		}
		if err := t.Delete(filesetKey(root)); err != nil {
			return err
		}
		return t.record(edit{kind: editFileset, ino: root, rec: rec})
	})
	if err != nil {
		return fmt.Errorf("delete fileset %d: %w", root, err)
	}
	return nil
}

// IngestDir implements FilesetAPI. An entry whose name the directory
// already has is left alone: it was ingested before or made locally, and
// a local name wins over home's. A new entry becomes a placeholder inode
// with home's type, permissions, size and times; a symlink comes with its
// target and is cached at once, and so is an empty file.
func (s *Service) IngestDir(ctx context.Context, req IngestDirReq) (Inode, error) {
	if len(req.Entries) > MaxIngestEntries {
		return Inode{}, fmt.Errorf("ingest into directory %d: %d entries, max %d: %w", req.Dir, len(req.Entries), MaxIngestEntries, ErrInvalid)
	}
	for _, e := range req.Entries {
		if err := checkName(e.Name); err != nil {
			return Inode{}, fmt.Errorf("ingest into directory %d: entry %s: %w", req.Dir, Quote(e.Name), err)
		}
		switch typeOf(e.Mode) {
		case syscall.S_IFREG, syscall.S_IFDIR:
		case syscall.S_IFLNK:
			if e.Target == "" || len(e.Target) > MaxTargetLen {
				return Inode{}, fmt.Errorf("ingest into directory %d: symlink %s: target of %d bytes: %w", req.Dir, Quote(e.Name), len(e.Target), ErrInvalid)
			}
		default:
			return Inode{}, fmt.Errorf("ingest into directory %d: entry %s: type %#o is not a file, directory or symlink: %w", req.Dir, Quote(e.Name), typeOf(e.Mode), ErrInvalid)
		}
		if len(e.Token) > MaxToken {
			return Inode{}, fmt.Errorf("ingest into directory %d: entry %s: change token of %d bytes: %w", req.Dir, Quote(e.Name), len(e.Token), ErrInvalid)
		}
	}
	inos := make([]Ino, len(req.Entries))
	for i := range inos {
		ino, err := s.allocIno(ctx)
		if err != nil {
			for _, n := range inos[:i] {
				s.releaseIno(n)
			}
			return Inode{}, fmt.Errorf("ingest into directory %d: %w", req.Dir, err)
		}
		inos[i] = ino
	}
	used := make([]bool, len(inos))
	var out Inode
	err := s.update(ctx, func(t txn) error {
		clear(used)
		dir, err := t.getDir(req.Dir)
		if err != nil {
			return err
		}
		if dir.Gateway == nil {
			return fmt.Errorf("directory %d is in no fileset: %w", req.Dir, ErrInvalid)
		}
		now := s.nowNs()
		for i, e := range req.Entries {
			_, _, exists, err := t.getDentry(req.Dir, e.Name)
			if err != nil {
				return err
			}
			if exists {
				continue
			}
			rec := placeholder(dir, inos[i], e, now, s.blockSize)
			if rec.IsDir() {
				dir.Nlink++
			}
			if err := t.putDentry(dir.Ino, e.Name, rec.Ino, typeOf(rec.Mode)); err != nil {
				return err
			}
			if err := t.putInode(rec); err != nil {
				return err
			}
			if err := t.record(edit{kind: editIngest, ino: rec.Ino, rec: rec, dir: dir.Ino, name: e.Name}); err != nil {
				return err
			}
			used[i] = true
		}
		if req.Done {
			dir.Gateway.State = CacheCached
			dir.Gateway.Validated = req.Validated
		}
		dir.Change++
		if err := t.putInode(dir); err != nil {
			return err
		}
		out = dir.Inode
		return t.record(edit{kind: editFileset, ino: dir.Ino, rec: dir})
	})
	for i, u := range used {
		if !u || err != nil {
			s.releaseIno(inos[i])
		}
	}
	if err != nil {
		return Inode{}, fmt.Errorf("ingest into directory %d: %w", req.Dir, err)
	}
	return out, nil
}

// placeholder makes the inode record of home entry e in directory dir.
func placeholder(dir *inodeRec, ino Ino, e HomeEntry, now int64, defBlockSize uint32) *inodeRec {
	typ := typeOf(e.Mode)
	perm := e.Mode & 07777
	if perm == 0 {
		perm = 0644
		if typ == syscall.S_IFDIR {
			perm = 0755
		}
	}
	mtime, ctime := e.HomeMtime, e.HomeCtime
	if mtime == 0 {
		mtime = now
	}
	if ctime == 0 {
		ctime = mtime
	}
	rec := &inodeRec{}
	rec.Attr = Attr{Ino: ino, Gen: 1, Mode: typ | perm, Uid: dir.Uid, Gid: dir.Gid, Nlink: 1,
		Atime: mtime, Mtime: mtime, Ctime: ctime, Change: 1, BlockSize: dir.BlockSize,
		Policy: dir.Policy, Replicas: dir.Replicas, Size: e.Size}
	if rec.BlockSize == 0 {
		rec.BlockSize = defBlockSize
	}
	rec.Parent = dir.Ino
	g := &GatewayInfo{Fileset: dir.Gateway.Fileset, HomePath: path.Join(dir.Gateway.HomePath, e.Name),
		HomeMtime: e.HomeMtime, HomeCtime: e.HomeCtime, HomeSize: e.Size, Token: e.Token,
		State: CachePlaceholder, Validated: now}
	if dir.Gateway.HomePath == "" {
		g.HomePath = e.Name
	}
	switch typ {
	case syscall.S_IFDIR:
		rec.Nlink = 2
		rec.Size = 0
	case syscall.S_IFLNK:
		rec.Mode = syscall.S_IFLNK | 0777
		rec.Target = e.Target
		rec.Size = uint64(len(e.Target))
		g.State = CacheCached
	default:
		if e.Size == 0 {
			g.State = CacheCached
		}
	}
	rec.Gateway = g
	return rec
}

// SetGateway implements FilesetAPI. It does not change the inode's Change
// or times: the section records what the cache holds of home, not a
// change of the file.
func (s *Service) SetGateway(ctx context.Context, ino Ino, g GatewayInfo, ifChange uint64) (Inode, error) {
	if g.Fileset == 0 || g.State < CachePlaceholder || g.State > CacheCached || len(g.HomePath) > MaxHomePath || len(g.Token) > MaxToken {
		return Inode{}, fmt.Errorf("set gateway section of inode %d: fileset %d, state %d, path of %d bytes, token of %d bytes: %w",
			ino, g.Fileset, g.State, len(g.HomePath), len(g.Token), ErrInvalid)
	}
	if err := checkRanges(&g); err != nil {
		return Inode{}, fmt.Errorf("set gateway section of inode %d: %v: %w", ino, err, ErrInvalid)
	}
	var out Inode
	err := s.update(ctx, func(t txn) error {
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		if ifChange != 0 && rec.Change != ifChange {
			return &ConflictError{Ino: ino}
		}
		g.Cached = append([]BlockRange(nil), g.Cached...)
		rec.Gateway = &g
		if err := t.putInode(rec); err != nil {
			return err
		}
		out = rec.Inode
		return t.record(edit{kind: editFileset, ino: ino, rec: rec})
	})
	if err != nil {
		return Inode{}, fmt.Errorf("set gateway section of inode %d: %w", ino, err)
	}
	return out, nil
}
