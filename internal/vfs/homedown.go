package vfs

import (
	"context"
	"fmt"
	"log/slog"
	"syscall"

	"tessera/internal/meta"
)

// Home down (Panache's disconnected operation; issue 14 item 6,
// docs/design/2026-11-25-gateway-disconnected.md). What is cached is
// served and every update is accepted while home cannot be reached. Two
// things need home and cannot be served without it:
//
//   - the listing of a directory never listed: in a fileset that takes
//     local updates (sw, iw, lu) the directory stays a placeholder
//     ("listing pending") and its local entries are served, so that
//     creates, mkdirs and renames into it work; a name not made locally
//     looks absent. The next use after home returns lists it: home's
//     names are added beside the local ones, and a name made on both
//     sides is settled by the fileset's conflict policy when its
//     write-back reaches home. A read-only fileset gets EIO;
//   - bytes of a file not cached (a read, or the completion of a partly
//     cached file before a write open or a truncate): EIO.
//
// EIO is the one errno of "home was needed and could not be reached",
// whatever the gateway's own error was (ECONNREFUSED of a dial, no live
// gateway, a home store's error); the log line names the fileset, its
// home and that error, at most once per interval (homeLog).

// homeFailed wraps err, the failure of a gateway call that needed home
// for op on inode in, as EIO, and logs it with the fileset and its home.
func (v *FS) homeFailed(ctx context.Context, op string, in *meta.Inode, err error) error {
	if ctx.Err() != nil {
		return err // interrupted: the caller is gone, nothing to report
	}
	v.logHome(ctx, slog.LevelWarn, op+": home not reachable; EIO", in, err)
	return fmt.Errorf("%s inode %d: home not reachable: %v: %w", op, in.Ino, err, syscall.EIO)
}

// listPending reports whether directory in, whose listing at home failed
// with err, may be served from its local entries: in a fileset that takes
// local updates, not when the request was interrupted.
func (v *FS) listPending(ctx context.Context, in *meta.Inode, err error) bool {
	if ctx.Err() != nil || in.Gateway == nil {
		return false
	}
	f, ferr := v.filesetOf(ctx, in.Gateway.Fileset)
	if ferr != nil || f.Mode == meta.ModeRO {
		return false
	}
	v.logHome(ctx, slog.LevelWarn, "list: home not reachable; serving the directory's local entries, listing pending", in, err)
	return true
}

// logHome logs msg about inode in of a fileset with the fileset's root
// and home, rate limited.
func (v *FS) logHome(ctx context.Context, level slog.Level, msg string, in *meta.Inode, err error) {
	ok, suppressed := v.homeLog.Allow()
	if !ok {
		return
	}
	var root meta.Ino
	var home string
	if in.Gateway != nil {
		root = in.Gateway.Fileset
		if f, ferr := v.filesetOf(ctx, root); ferr == nil {
			home = f.Home
		}
	}
	v.log.Log(ctx, level, msg, "inode", in.Ino, "fileset", root, "home", home, "err", err, "suppressed", suppressed)
}
