package meta

import (
	"context"
	"fmt"

	"tessera/internal/kv"
)

// The mutation pipeline (docs/design/2026-11-29-meta-pipeline.md).
//
// Every change of the store runs through update: its function runs in one
// read-write transaction and states what it changes by recording edits in
// the transaction's change set (txn.record). Each edit is handed, as it is
// recorded and inside that transaction, to the in-transaction stage of
// every registered hook in registration order; a hook's error aborts the
// change. Once the transaction commits, the post-commit stage of every hook
// runs on the whole set, in the same order. A change that recorded nothing
// (session records, the server map, write-back queue bookkeeping) runs no
// hook.
//
// The hooks New registers: the write-back queue and read-only filesets
// (writebackHook, wbqueue.go), the usage counters (usageHook, usage.go), and
// the telling of lease holders (noticeHook, bound.go): callback requests to
// other meta services in the transaction, change notices to this service's
// sessions after the commit. An operation names what it changed and no
// hook; a new hook is one registration.
//
// Where an operation records an edit is where the hooks run: after it made
// the change (so a hook reads the state after it, and a check of the
// operation's own fails first), except for xattrs, which record before
// they look further, so that a read-only fileset refuses first (EROFS, as
// a read-only mount, not ENODATA).

// editKind is what one edit did.
type editKind uint8

const (
	// editCreate: a new inode rec, named dir/name (name "": O_TMPFILE,
	// nameless).
	editCreate editKind = iota + 1
	// editIngest: a placeholder rec of home's entry dir/name, made by a
	// gateway's ingest (home's content, not a local change).
	editIngest
	// editLink: a further name dir/name of the inode rec (was: its
	// parent pointer before).
	editLink
	// editRemove: the name dir/name of ino went (isDir: a directory); rec
	// is the inode after (nil for a directory).
	editRemove
	// editRename: ino moved from dir/name to to/toName; replaced is the
	// inode the move overwrote (0: none); exchange: the two swapped.
	editRename
	// editDelete: the inode rec went with its recipe and xattrs.
	editDelete
	// editAttr: attributes of rec (valid: SetAttrReq.Valid; sizeDelta).
	editAttr
	// editContent: the recipe of rec, and its size by sizeDelta.
	editContent
	// editXattr: an xattr of rec, about to change.
	editXattr
	// editFileset: fileset state: a fileset made or detached (ino its
	// root), a file's cached data evicted (rec).
	editFileset

	editKinds = editFileset // the largest kind
)

var editNames = [...]string{editCreate: "create", editIngest: "ingest", editLink: "link", editRemove: "remove",
	editRename: "rename", editDelete: "delete", editAttr: "attr", editContent: "content", editXattr: "xattr",
	editFileset: "fileset"}

func (k editKind) String() string {
	if k == 0 || k > editKinds {
		return fmt.Sprintf("edit(%d)", uint8(k))
	}
	return editNames[k]
}

// touch is what of the metadata an edit changes, as a bit set.
type touch uint8

const (
	touchInode touch = 1 << iota
	touchEntry
	touchRecipe
	touchXattr
	touchFileset

	touchAll = touchInode | touchEntry | touchRecipe | touchXattr | touchFileset
)

// touches returns what an edit of kind k changes.
func (k editKind) touches() touch {
	switch k {
	case editCreate, editLink, editRemove, editRename:
		return touchInode | touchEntry
	case editIngest:
		return touchInode | touchEntry | touchFileset
	case editDelete:
		return touchInode | touchRecipe | touchXattr
	case editAttr:
		return touchInode | touchRecipe // a size change cuts or extends the recipe
	case editContent:
		return touchInode | touchRecipe
	case editXattr:
		return touchInode | touchXattr
	case editFileset:
		return touchFileset
	}
	return 0
}

// edit is one change an operation made, as its hooks see it. Which fields
// are set depends on the kind (editKind).
type edit struct {
	kind editKind
	ino  Ino
	rec  *inodeRec // the inode after the change, where the kind has one
	// dir/name: the entry made or removed, or a rename's source.
	dir  Ino
	name string
	// to/toName: a rename's destination.
	to       Ino
	toName   string
	replaced Ino
	// was: a link's inode's parent pointer before (an O_TMPFILE inode's
	// moves to its first name).
	was      Ino
	isDir    bool
	exchange bool
	valid    uint32
	// sizeDelta is how much the file's size grew (negative: shrank).
	sizeDelta int64
	// tell: the lease holders to tell of the change (noticeHook).
	tell *notice
}

// notice is what the holders of leases on an inode are told of a change.
type notice struct {
	change
	// sync: the operation returns once the holders acknowledged (or
	// their sessions expired); a failure to tell them is its error.
	sync bool
	// gone: afterwards the leases of sessions that do not have the inode
	// open end (its last name went).
	gone bool
	// quiet: no notice and no callback, only gone (a removed directory).
	quiet bool
}

// changeSet is what one change's transaction recorded.
type changeSet struct {
	ctx   context.Context
	edits []edit
	// calls are the callback requests written to other meta services,
	// by inode (noticeHook).
	calls map[Ino][][]byte
	// quotas are the quota records, read once (quotaHook).
	quotas     map[Ino]*quotaState
	quotasRead bool
	// quotaVersion is the version of the quota set quotas were read at
	// (0: none, or changed by this change: no cached chains);
	// quotasChanged: this change wrote the set (quota_cache.go).
	quotaVersion  uint64
	quotasChanged bool
	// filesets are the filesets, read once (writebackHook).
	filesets     map[Ino]Fileset
	filesetsRead bool
}

// hook is a registered part of every change: inTxn sees each edit as it is
// recorded, inside the transaction (its error aborts the change);
// committed sees the whole set once it committed (its error is the
// operation's). Either may be nil.
type hook struct {
	name      string
	inTxn     func(ctx context.Context, t txn, e *edit) error
	committed func(ctx context.Context, cs *changeSet) error
}

// addHook registers h after the hooks registered before it. Hooks are
// registered before the Service serves (New, tests).
func (s *Service) addHook(h hook) { s.hooks = append(s.hooks, h) }

// changeTxn carries the change set of a transaction under the typed txn.
type changeTxn struct {
	kv.Txn
	s  *Service
	cs *changeSet
}

// GetMany passes kv.GetMany through to the store's transaction, so that
// it reads several keys in one call where the store can.
func (c changeTxn) GetMany(keys [][]byte) ([][]byte, []bool, error) { return kv.GetMany(c.Txn, keys) }

// Prefetch passes kv.Prefetch through to the store's transaction.
func (c changeTxn) Prefetch(keys [][]byte, ranges []kv.Range) error {
	return kv.Prefetch(c.Txn, keys, ranges)
}

// PresumeAbsent passes kv.PresumeAbsent through to the store's
// transaction.
func (c changeTxn) PresumeAbsent(key []byte) (bool, error) { return kv.PresumeAbsent(c.Txn, key) }

// changes returns t's change set and its Service; nil outside update.
func (t txn) changes() (*Service, *changeSet) {
	tx := t.Txn
	if c, ok := tx.(countTxn); ok {
		tx = c.Txn
	}
	if c, ok := tx.(changeTxn); ok {
		return c.s, c.cs
	}
	return nil, nil
}

// engine returns the store's own transaction under t's wrappers (the
// change set's, the segment's count), which pass kv.GetMany and
// kv.Prefetch on whether or not the store batches them.
func (t txn) engine() kv.Txn {
	tx := t.Txn
	for {
		switch c := tx.(type) {
		case changeTxn:
			tx = c.Txn
		case countTxn:
			tx = c.Txn
		default:
			return tx
		}
	}
}

// multiGets reports whether the store reads several keys in one call
// (kv.MultiGetter). Where it does not, kv.GetMany is a Get per key and
// costs a slice of keys and two of results besides: callers read key by
// key instead.
func (t txn) multiGets() bool {
	_, ok := t.engine().(kv.MultiGetter)
	return ok
}

// prefetches reports whether the store prefetches (kv.Prefetcher); where
// it does not, kv.Prefetch does nothing, and the keys and ranges made for
// it are garbage: callers skip making them.
func (t txn) prefetches() bool {
	_, ok := t.engine().(kv.Prefetcher)
	return ok
}

// record adds e to t's change set and runs the in-transaction hooks on it.
func (t txn) record(e edit) error {
	s, cs := t.changes()
	if cs == nil {
		return fmt.Errorf("meta: %v of inode %d outside a change transaction: %w", e.kind, e.ino, ErrIO)
	}
	for _, h := range s.hooks {
		if h.inTxn == nil {
			continue
		}
		if err := h.inTxn(cs.ctx, t, &e); err != nil {
			return err
		}
	}
	cs.edits = append(cs.edits, e)
	return nil
}

// update runs fn in a read-write transaction with a change set, then the
// post-commit hooks on what it recorded; kv errors that are not already
// classified become ErrIO.
func (s *Service) update(ctx context.Context, fn func(t txn) error) error {
	var cs *changeSet
	err := classify(s.store.Update(ctx, func(tx kv.Txn) error {
		cs = &changeSet{ctx: ctx} // a rerun records anew
		return fn(txn{changeTxn{Txn: tx, s: s, cs: cs}})
	}))
	if err != nil || cs == nil || len(cs.edits) == 0 {
		return err
	}
	for _, h := range s.hooks {
		if h.committed == nil {
			continue
		}
		if herr := h.committed(ctx, cs); herr != nil && err == nil {
			err = herr
		}
	}
	return err
}
