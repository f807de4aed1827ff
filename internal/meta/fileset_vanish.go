package meta

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// Names gone at home (Panache §5.3/§5.4). When revalidation finds that
// home no longer has a name a cached directory holds, the gateway removes
// it from the cache, but only if the cache holds nothing of its own there:
// RemoveVanished decides that in the removal's own transaction, so a local
// change racing with it either lands first (and the name stays) or finds
// the name gone, as a change racing with any unlink does.

// ErrDirty refuses RemoveVanished and EvictData for what the cache has
// changes of its own under: queued for write-back, made locally, or
// changed locally. An errno, so that it keeps its meaning over the wire.
var ErrDirty = syscall.EBUSY

// VanishAPI is the call that removes a name home no longer has:
// *Service implements it, and so do the authorizing view (authz) and the
// RPC client (metarpc).
type VanishAPI interface {
	// RemoveVanished: see Service.RemoveVanished.
	//tessera:authz cache cluster: admins and gateways
	RemoveVanished(ctx context.Context, parent Ino, name string, ino Ino, isDir bool) error
}

var _ VanishAPI = (*Service)(nil)

// vanishKey marks the context of a RemoveVanished: the hook checks the
// removed inode (wbRemoved calls vanishGuard first).
type vanishKey struct{}

type vanishReq struct {
	ino Ino  // the inode the name must still name
	any bool // read-only fileset: every vanished name goes
	// fromHome: ino has a home path (read before the transaction: a
	// home path never comes or goes by a local change, and Rmdir has
	// deleted the inode by the time the hook runs).
	fromHome bool
}

// RemoveVanished removes parent/name, which named ino when home was
// listed, because home no longer has it. A directory must be empty in the
// cache (remove its children first; ErrNotEmpty otherwise). In a
// read-only fileset (the cache has no changes of its own) any such name
// goes; in the others the name must be clean, else ErrDirty: no write-back operation of ino is
// queued, the inode came from home (a home path) or reached it (a
// write-back was applied), and a file still has home's size and mtime (a
// local-update fileset queues nothing, so a local write shows only
// there). A name that names another inode by now is ErrConflict. A file
// open somewhere stays readable as an orphan, as after any unlink. The
// removal is home's, not a local update: it is not queued.
func (s *Service) RemoveVanished(ctx context.Context, parent Ino, name string, ino Ino, isDir bool) error {
	in, err := s.GetAttr(ctx, ino)
	if err != nil {
		return fmt.Errorf("remove %d/%s, gone at home: %w", parent, Quote(name), err)
	}
	if in.Gateway == nil {
		return fmt.Errorf("remove %d/%s, gone at home: not in a fileset: %w", parent, Quote(name), ErrInvalid)
	}
	f, err := s.Fileset(ctx, in.Gateway.Fileset)
	if err != nil {
		return fmt.Errorf("remove %d/%s, gone at home: %w", parent, Quote(name), err)
	}
	any := f.Mode == ModeRO
	fromHome := in.Gateway.HomePath != ""
	ctx = context.WithValue(WithoutWriteback(ctx), vanishKey{}, vanishReq{ino: ino, any: any, fromHome: fromHome})
	if isDir {
		err = s.Rmdir(ctx, parent, name)
	} else {
		_, err = s.Unlink(ctx, parent, name, 0)
	}
	if err != nil {
		return fmt.Errorf("remove %d/%s, gone at home: %w", parent, Quote(name), err)
	}
	return nil
}

// vanishGuard is RemoveVanished's check, inside the removal's transaction
// (see there); outside a RemoveVanished it does nothing.
func (t txn) vanishGuard(ctx context.Context, ino Ino) error {
	req, ok := ctx.Value(vanishKey{}).(vanishReq)
	if !ok {
		return nil
	}
	if ino != req.ino {
		return &ConflictError{Ino: ino}
	}
	// The inode's name record goes with the name (the hook, told to skip
	// write-back, does not delete it).
	if err := t.Delete(wbKey(wbName, ino)); err != nil {
		return err
	}
	if req.any {
		return nil
	}
	if op, err := t.wbLatestOp(ino); err != nil || op != nil {
		if err == nil {
			err = fmt.Errorf("write-back queued (%v %s): %w", op.Kind, Quote(op.Path), ErrDirty)
		}
		return err
	}
	if !req.fromHome {
		_, applied, err := t.Get(wbKey(wbToken, ino))
		if err != nil {
			return err
		}
		if !applied {
			return fmt.Errorf("the cache has changes of it: %w", ErrDirty)
		}
	}
	rec, err := t.getInode(ino)
	if errors.Is(err, ErrNotFound) {
		return nil // a directory Rmdir has deleted already
	}
	if err != nil {
		return err
	}
	if sec := rec.Gateway; sec == nil || !rec.IsDir() && (rec.Mtime != sec.HomeMtime || rec.Size != sec.HomeSize) {
		return fmt.Errorf("the cache has changes of it: %w", ErrDirty)
	}
	return nil
}
