package writeback

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// errSource marks a failure to read Tessera: retried like a home outage.
var errSource = errors.New("reading the cache")

func retryable(err error) bool {
	return home.Retryable(err) || errors.Is(err, errSource) && !errors.Is(err, ErrPartial)
}

// apply carries one operation home; token is home's change token of the
// object afterwards, when there is one to record.
func (a *Applier) apply(ctx context.Context, f Fileset, op meta.WBOp) (string, error) {
	h := f.Home
	switch op.Kind {
	case meta.OpPut:
		return a.put(ctx, f, op)
	case meta.OpMkdir:
		err := h.Mkdir(ctx, op.Path, op.Mode)
		if errors.Is(err, home.ErrExist) {
			if at, serr := h.Stat(ctx, op.Path); serr == nil && at.Kind == home.KindDir {
				err = nil // applied before: a retry
			}
		}
		return "", err
	case meta.OpSymlink:
		sl, ok := h.(home.Symlinker)
		if !ok {
			return "", fmt.Errorf("symlink %q: %w", op.Path, home.ErrUnsupported)
		}
		err := sl.Symlink(ctx, op.Target, op.Path)
		if errors.Is(err, home.ErrExist) {
			if t, rerr := sl.Readlink(ctx, op.Path); rerr == nil && t == op.Target {
				err = nil
			}
		}
		return "", err
	case meta.OpRemove:
		err := h.Remove(ctx, op.Path)
		if errors.Is(err, home.ErrNotFound) {
			err = nil // removed before, or never reached home
		}
		return "", err
	case meta.OpRmdir:
		err := h.Rmdir(ctx, op.Path)
		if errors.Is(err, home.ErrNotFound) {
			err = nil
		}
		return "", err
	case meta.OpRename:
		err := h.Rename(ctx, op.Path, op.Path2)
		if errors.Is(err, home.ErrNotFound) {
			// Done before (the target is there), or the source never
			// reached home (a file gone before its Put was applied).
			err = nil
		}
		return "", err
	case meta.OpSetattr:
		return "", a.setattr(ctx, h, op)
	}
	return "", fmt.Errorf("operation %v: %w", op.Kind, home.ErrUnsupported)
}

func (a *Applier) setattr(ctx context.Context, h home.Store, op meta.WBOp) error {
	sa, ok := h.(home.Setattrer)
	if !ok {
		return nil // the home keeps no modes or times: the cache's stand
	}
	err := sa.Chmod(ctx, op.Path, op.Mode)
	if err == nil && op.Mtime != 0 {
		err = sa.Chtimes(ctx, op.Path, time.Time{}, time.Unix(0, op.Mtime))
	}
	if errors.Is(err, home.ErrNotFound) {
		err = nil // the object went meanwhile; its removal follows
	}
	return err
}

// put writes the file's current content home, after the conflict check.
func (a *Applier) put(ctx context.Context, f Fileset, op meta.WBOp) (string, error) {
	h := f.Home
	if op.New {
		// A file made in the cache: a name home has too was made there
		// meanwhile (the directory was not listed, or was listed before
		// home's was made, as in disconnected operation), so both sides
		// made it: a conflict, not an overwrite. Unless home's file has
		// the cache's bytes: then it is this Put's own, applied before a
		// crash (or the same bytes made twice), and is written again.
		at, err := h.Stat(ctx, op.Path)
		switch {
		case err == nil && at.Kind == home.KindFile && a.sameBytes(ctx, h, op, at.Size):
		case err == nil:
			done, err := a.conflict(ctx, f, op, "", at.Token)
			if done || err != nil {
				return "", err
			}
		case !errors.Is(err, home.ErrNotFound):
			return "", err
		}
	} else {
		seen, err := a.cfg.Queue.WritebackToken(ctx, op.Ino)
		if err != nil {
			return "", fmt.Errorf("%w: %w", errSource, err)
		}
		if seen != "" {
			at, err := h.Stat(ctx, op.Path)
			switch {
			case err == nil && at.Token != seen:
				done, err := a.conflict(ctx, f, op, seen, at.Token)
				if done || err != nil {
					return "", err
				}
			case err != nil && !errors.Is(err, home.ErrNotFound):
				return "", err
			}
		}
	}
	r, size, err := a.cfg.Source.Open(ctx, op.Ino)
	if errors.Is(err, meta.ErrNotFound) {
		return "", nil // gone: its removal follows in the queue
	}
	if err != nil {
		return "", fmt.Errorf("%w: file %d: %w", errSource, op.Ino, err)
	}
	defer r.Close()
	if _, err := h.WriteFile(ctx, op.Path, r, size, op.Mode); err != nil {
		return "", err
	}
	if err := a.setattr(ctx, h, op); err != nil {
		return "", err
	}
	at, err := h.Stat(ctx, op.Path)
	if err != nil {
		return "", err
	}
	return at.Token, nil
}

// conflictDir is where losers and reports go, under the fileset's root.
const conflictDir = ".conflicts"

// conflict settles a Put over a file that also changed at home; done says
// the Put must not go on.
func (a *Applier) conflict(ctx context.Context, f Fileset, op meta.WBOp, seen, found string) (done bool, err error) {
	h := f.Home
	base := path.Join(conflictDir, fmt.Sprintf("%s.%d", op.Path, op.Seq))
	if err := mkdirAll(ctx, h, path.Dir(base)); err != nil {
		return false, err
	}
	policy := f.Conflicts
	if policy == "" {
		policy = meta.ConflictsKeepBoth
	}
	action := map[string]string{
		meta.ConflictsCacheWins: "the cache's version was written over home's",
		meta.ConflictsHomeWins:  "home's version was kept; the cache's was dropped",
		meta.ConflictsKeepBoth:  "home's version was kept; the cache's is at " + base,
	}[policy]
	if policy == meta.ConflictsKeepBoth {
		r, size, err := a.cfg.Source.Open(ctx, op.Ino)
		if err != nil && !errors.Is(err, meta.ErrNotFound) {
			return false, fmt.Errorf("%w: file %d: %w", errSource, op.Ino, err)
		}
		if err == nil {
			_, err = h.WriteFile(ctx, base, r, size, op.Mode)
			r.Close()
			if err != nil {
				return false, err
			}
		}
	}
	report := fmt.Sprintf("path: %s\ninode: %d\nqueue entry: %d\npolicy: %v\nhome token last written: %s\nhome token found: %s\nat: %s\noutcome: %s\n",
		op.Path, op.Ino, op.Seq, policy, seen, found, a.cfg.Now().UTC().Format(time.RFC3339), action)
	if _, err := h.WriteFile(ctx, base+".report", stringsReader(report), int64(len(report)), 0o644); err != nil {
		return false, err
	}
	return policy != meta.ConflictsCacheWins, nil
}

// mkdirAll makes dir and its parents at home.
func mkdirAll(ctx context.Context, h home.Store, dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	if at, err := h.Stat(ctx, dir); err == nil {
		if at.Kind != home.KindDir {
			return fmt.Errorf("%q: %w", dir, home.ErrNotDir)
		}
		return nil
	}
	if err := mkdirAll(ctx, h, path.Dir(dir)); err != nil {
		return err
	}
	if err := h.Mkdir(ctx, dir, 0o755); err != nil && !errors.Is(err, home.ErrExist) {
		return err
	}
	return nil
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// sameBytes reports whether home's file at op.Path (size bytes) holds the
// cache's content of op's file; any error reading either side says no.
func (a *Applier) sameBytes(ctx context.Context, h home.Store, op meta.WBOp, size int64) bool {
	r, n, err := a.cfg.Source.Open(ctx, op.Ino)
	if err != nil {
		return false
	}
	defer r.Close()
	if n != size {
		return false
	}
	mine, theirs := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); off < size; {
		k := int(min(int64(len(mine)), size-off))
		if _, err := io.ReadFull(r, mine[:k]); err != nil {
			return false
		}
		got, err := h.ReadAt(ctx, op.Path, theirs[:k], off)
		if got != k || err != nil && !errors.Is(err, io.EOF) || !bytes.Equal(mine[:k], theirs[:k]) {
			return false
		}
		off += int64(k)
	}
	return true
}
