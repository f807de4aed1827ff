package meta

import (
	"context"
	"time"

	"tessera/internal/block"
)

// The meta service's API, by concern (docs/design/2026-11-29-meta-api-split.md):
//
//   - FS: the file-system operations a mount makes (POSIX namespace,
//     recipes and commits, opens, xattrs, sync, statfs);
//   - Cluster: the block-server map, the mover, composed blocks and the
//     walks of every block (block servers, gc, fsck, admins);
//   - Sessions: client sessions and their callbacks.
//
// API embeds the three: the in-process Service and the RPC clients
// implement it, and callers that need one concern take that interface.
// Beside it stand the optional interfaces (optional.go): FilesetAPI,
// FilesetReadsAPI, EvictAPI, VanishAPI and GatewaysAPI (filesets and their
// gateways), WritebackAPI (the write-back queue), QuotaAPI (directory
// quotas), BlockLister (a paged walk of the blocks) and SessionBinder.
// Who may call what is stated per interface in package authz's tables.
//
// Every method may return ErrIO wrapped with context when the service is
// unreachable. Decorators' pass-through methods, the RPC client's methods
// and server's handlers, and authz's rules and view are generated from
// these declarations and the optional interfaces' (internal/meta/wrapgen):
// a method added here reaches every generated decorator by `go generate
// ./...`. Each method carries a //tessera:authz directive saying who may
// call it (wrapgen's authz.go); one without fails generation. Its RPC is
// the one of its name, unless a //tessera:rpc NAME directive names
// another.

// API is the metadata service as clients see it: every concern.
type API interface {
	FS
	Cluster
	Sessions
}

// FS is the file-system API: what a mount calls to read and change the
// namespace and files' contents.
type FS interface {
	//tessera:authz read tree
	Lookup(ctx context.Context, parent Ino, name string) (Inode, error)
	//tessera:authz read tree
	GetAttr(ctx context.Context, ino Ino) (Inode, error)
	//tessera:authz write tree
	SetAttr(ctx context.Context, ino Ino, req SetAttrReq) (Inode, error)
	//tessera:authz write tree
	Create(ctx context.Context, req CreateReq) (Inode, error)
	//tessera:authz write tree
	Link(ctx context.Context, ino, newParent Ino, newName string) (Inode, error)
	// Unlink removes a non-directory entry and returns the inode as it is
	// after (Nlink 0 means it became an orphan; see Reap). When reap names the
	// entry's inode (the caller has no handle open on it), this was its last
	// link and no live session holds it open (HoldOpen), the inode is
	// deleted in the same transaction instead.
	//tessera:authz write tree
	Unlink(ctx context.Context, parent Ino, name string, reap Ino) (Inode, error)
	// Rmdir removes the empty directory parent/name. A directory a live
	// session has open stays as an orphan (Nlink 0, no entries can be
	// made in it) until the last of them releases it.
	//tessera:authz write tree
	Rmdir(ctx context.Context, parent Ino, name string) error
	// Rename returns the inode the rename replaced, as it is after (Ino 0
	// when it replaced nothing; Nlink 0 means it became an orphan to Reap).
	//tessera:authz write tree
	Rename(ctx context.Context, oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) (replaced Inode, err error)
	// ReadDir lists entries with names after `after` (in name order), at most
	// limit of them; more reports whether entries remain.
	//tessera:authz read tree
	ReadDir(ctx context.Context, dir Ino, after string, limit int, plus bool) (ents []DirEntry, more bool, err error)

	// GetRecipe returns block hashes from index first, at most count.
	//tessera:authz read tree
	GetRecipe(ctx context.Context, ino Ino, first, count uint64) (Recipe, error)
	//tessera:authz write tree
	Commit(ctx context.Context, req CommitReq) (Inode, error)
	// Reap deletes an orphan (Nlink 0) inode and its recipe unless a live
	// session holds it open (HoldOpen) or the service is in its restart
	// grace; a no-op for linked inodes.
	//tessera:authz write tree
	Reap(ctx context.Context, ino Ino) error
	// HoldOpen records that the calling session has ino open (a file or a
	// directory; one more open each call) and returns the inode, as
	// GetAttr. While a live session holds an orphan open it is not deleted:
	// it can still be read, written and stat'ed (opens.go). Without a
	// session, or with an expired one, it holds nothing.
	//tessera:authz read tree
	HoldOpen(ctx context.Context, ino Ino) (Inode, error)
	// ReleaseOpen drops one open HoldOpen (or Create with Open) recorded
	// for the calling session; an orphan that no live session holds any
	// more is deleted.
	//tessera:authz read tree
	ReleaseOpen(ctx context.Context, ino Ino) error

	//tessera:authz read tree
	GetXattr(ctx context.Context, ino Ino, name string) ([]byte, error)
	//tessera:authz write tree
	SetXattr(ctx context.Context, ino Ino, name string, value []byte, flags uint32) error
	//tessera:authz read tree
	ListXattr(ctx context.Context, ino Ino) ([]string, error)
	//tessera:authz write tree
	RemoveXattr(ctx context.Context, ino Ino, name string) error

	// Sync returns once every change acknowledged before the call is
	// durable: it survives a crash of the machine, where an acknowledged
	// change is only sure to survive a crash of the meta service (see the
	// package comment, Durability).
	//tessera:authz read tree
	Sync(ctx context.Context) error

	//tessera:authz read tree: totals only
	StatFS(ctx context.Context) (StatFS, error)
}

// Cluster is the cluster and administration API: the block-server map,
// the mover's report, composed blocks stored whole, and the walk of every
// block a recipe names.
type Cluster interface {
	//tessera:authz read tree
	Servers(ctx context.Context) (ServerMap, error)
	// RegisterServer adds a server or refreshes it (a heartbeat): Seen is
	// set, a down server comes back up, a draining one stays draining.
	//tessera:authz register cluster: bound to its name
	RegisterServer(ctx context.Context, s Server) (ServerMap, error)
	// SetServerState sets StateUp or StateDraining, or "removed" to drop
	// the server from the map.
	//tessera:authz admin cluster
	SetServerState(ctx context.Context, id, state string) (ServerMap, error)
	// SetReplicas sets the cluster's default replication factor.
	//tessera:authz admin cluster logged
	SetReplicas(ctx context.Context, replicas int) (ServerMap, error)
	// MoverProgress returns the mover's latest report.
	//tessera:authz admin cluster: names lost blocks' inodes
	MoverProgress(ctx context.Context) (MoverProgress, error)
	// Decompose records that composed block h is now stored whole on the
	// block servers (BlockChange.Compose): its composition goes, and with
	// it the references to its pieces. A hash that is not composed is left
	// alone.
	//tessera:authz write tree: block hashes are not confined
	Decompose(ctx context.Context, hash block.Hash) error
	// WalkBlocks calls fn with every block hash some recipe (or orphan's
	// recipe) refers to, with the inode that refers to it; for gc and fsck.
	// A composed block is reported as its pieces (BlockChange.Compose).
	//tessera:authz admin cluster: lists every inode; ListBlocks is checked under this rule
	WalkBlocks(ctx context.Context, fn func(ino Ino, index uint64, h block.Hash) error) error
}

// Sessions is the API of client sessions (session.go): the holders of
// leases and receivers of callbacks.
type Sessions interface {
	// OpenSession starts a client session: the holder of leases and the
	// receiver of callbacks (session.go). It lives while it polls Callbacks
	// at least once per TTL.
	//tessera:authz read tree
	OpenSession(ctx context.Context) (SessionInfo, error)
	// Callbacks is a long poll: it acknowledges every callback with Seq <=
	// ack, renews the session, and returns the pending callbacks (Seq > ack)
	// at once if there are any, else waits up to wait (capped at TTL/3) for
	// one. An expired or unknown session gives ErrSessionExpired.
	//tessera:authz read tree
	Callbacks(ctx context.Context, id SessionID, ack uint64, wait time.Duration) ([]Callback, error)
	// CloseSession ends a session and drops its leases; closing an unknown
	// session is not an error.
	//tessera:authz read tree
	CloseSession(ctx context.Context, id SessionID) error
}
