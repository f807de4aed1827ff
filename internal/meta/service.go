package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"tessera/internal/kv"
)

// FormatVersion is the key-schema version New writes and accepts. New
// upgrades a store of version 1 (no reference counts) by counting its
// recipes once, and one of version 1 or 2 (no parent pointers for
// non-directories, subtree.go) by reading its directory entries once, in
// one transaction. Version 4 writes inode records in their version 2
// layout (records.go), which builds of version 3 cannot read; its own
// build reads both, so a store of version 3 is marked 4 and nothing else.
// Version 5 keeps the quota set's version ("m" "quotas", quota_cache.go),
// which builds of version 4 would not bump: a store of version 3 or 4
// with quotas gets one.
const FormatVersion = 5

// InoBatch is how many inode numbers a Service reserves at a time.
const InoBatch = 256

// MaxLink is the largest link count Link will produce (as ext4).
const MaxLink = 65000

// Options configure a Service.
type Options struct {
	// RootUid, RootGid and RootMode (permission bits; 0 means 0755) are
	// given to the root directory when New creates it.
	RootUid, RootGid uint32
	RootMode         uint32
	// RootPolicy is the root directory's consistency policy, which new
	// files and directories inherit from their parent: "" (the mount's
	// default) or a name policy.Lookup knows.
	RootPolicy string
	// BlockSize is given to new files whose parent directory names none;
	// 0 means DefaultBlockSize.
	BlockSize uint32
	// Now is the clock for inode times; nil means time.Now.
	Now func() time.Time
	// Replicas is the default replication factor until SetReplicas stores
	// one; 0 means 1.
	Replicas int
	// Site is the site this meta process runs in (its --site; "" for
	// none), which Site reports.
	Site string
	// After is the timer for session expiry and long polls, read against
	// Now; nil means time.After. Tests pass a fake clock's.
	After func(time.Duration) <-chan time.Time
	// SessionTTL is how long a session lives after its latest poll; 0
	// means DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxLeases bounds the leases of one session; past it the oldest is
	// dropped with an invalidation. 0 means DefaultMaxLeases.
	MaxLeases int
	// OrphanGrace is how long a Service started on a store that served
	// sessions before deletes no orphan (opens.go); 0 means twice the
	// SessionTTL, negative none.
	OrphanGrace time.Duration
	// Shared says other Services (meta processes) may share the store:
	// leases, callbacks and opens then cross them through records in the
	// store (shared.go), and ServeShared must run. The store must be a
	// kv.Watcher.
	Shared bool
	// Logger receives what the shared-store background work reports; nil
	// discards.
	Logger *slog.Logger
	// MaxTxnOps bounds the compares and the writes of each transaction
	// (segment.go): what grows with a file (reap, truncate) is done in
	// segments within it, and a Commit that needs more is refused with
	// ErrTooBig. It must not exceed the store's own bound (etcd's
	// --max-txn-ops); 0 means DefaultMaxTxnOps, the same on every engine.
	// At least MinTxnOps.
	MaxTxnOps int
	// MaxTxnBytes bounds the bytes each such transaction writes (keys and
	// values), as etcd's --max-request-bytes does; 0 means
	// DefaultMaxTxnBytes. At least MinTxnBytes.
	MaxTxnBytes int
}

// Service implements API over a kv.Store. It is safe for concurrent use.
type Service struct {
	store kv.Store
	hints *nameHints // which inode names had when last seen (hints.go)
	// quotaCache keeps the quota set and directories' chains between
	// changes (quota_cache.go).
	quotaCache quotaCache
	now        func() time.Time
	blockSize  uint32
	replicas   int    // default replication factor (Options.Replicas)
	site       string // Options.Site
	leases     *leaseTable
	// sh is the state of a Service of a shared store (nil: alone).
	sh *sharedState
	// cut remembers a record write of a lag-tolerant read that failed
	// (cutoff.go).
	cut cutoff
	// sessionsMarked: keySessions is in the store (opens.go).
	sessionsMarked atomic.Bool
	// maxTxnOps and maxTxnBytes are Options.MaxTxnOps and MaxTxnBytes
	// (segment.go).
	maxTxnOps, maxTxnBytes int
	// segmentFault, set by tests only, is called between the segments
	// of a drop; an error stops the drop there, as a crash would.
	segmentFault func(op string, ino Ino) error
	// hooks run on every change (pipeline.go), in this order.
	hooks []hook

	// mu guards the batch of reserved inode numbers.
	mu struct {
		sync.Mutex
		next, end Ino // [next, end) are reserved and unused
		spare     []Ino
	}
}

var (
	_ API           = (*Service)(nil)
	_ BlockLister   = (*Service)(nil)
	_ SessionBinder = (*Service)(nil)
)

// New returns a Service over store, creating the root directory and the
// format marker if the store is empty, and upgrading an older format.
func New(store kv.Store, opts Options) (*Service, error) {
	s := &Service{store: store, now: opts.Now, blockSize: opts.BlockSize, replicas: max(opts.Replicas, 1), site: opts.Site}
	s.quotaCache.exclusive = !opts.Shared
	if s.now == nil {
		s.now = time.Now
	}
	s.leases = newLeaseTable(opts, s.now)
	s.hints = newNameHints()
	s.addHook(s.writebackHook())
	s.addHook(usageHook())
	s.addHook(quotaHook())
	s.addHook(s.noticeHook())
	s.maxTxnOps = opts.MaxTxnOps
	if s.maxTxnOps == 0 {
		s.maxTxnOps = DefaultMaxTxnOps
	}
	if s.maxTxnOps < MinTxnOps {
		return nil, fmt.Errorf("meta: MaxTxnOps %d, at least %d: %w", opts.MaxTxnOps, MinTxnOps, ErrInvalid)
	}
	s.maxTxnBytes = opts.MaxTxnBytes
	if s.maxTxnBytes == 0 {
		s.maxTxnBytes = DefaultMaxTxnBytes
	}
	if s.maxTxnBytes < MinTxnBytes {
		return nil, fmt.Errorf("meta: MaxTxnBytes %d, at least %d: %w", opts.MaxTxnBytes, MinTxnBytes, ErrInvalid)
	}
	if s.blockSize == 0 {
		s.blockSize = DefaultBlockSize
	}
	if len(opts.RootPolicy) > MaxPolicyLen {
		return nil, fmt.Errorf("meta: root policy name of %d bytes: %w", len(opts.RootPolicy), ErrNameTooLong)
	}
	if opts.RootPolicy != "" {
		if _, err := checkPolicy(opts.RootPolicy); err != nil {
			return nil, fmt.Errorf("meta: root policy: %w", err)
		}
	}
	mode := opts.RootMode & 07777
	if mode == 0 {
		mode = 0755
	}
	err := store.Update(context.Background(), func(tx kv.Txn) error {
		if _, served, err := tx.Get(keySessions); err != nil {
			return err
		} else if served {
			// Clients of an earlier life of the service may hold
			// orphans open: give them time to say so.
			s.leases.graceUntil = s.now().Add(graceFor(opts))
			s.sessionsMarked.Store(true)
		}
		v, ok, err := tx.Get(keyFormat)
		if err != nil {
			return err
		}
		if err := (txn{tx}).markHookFlags(); err != nil {
			return err
		}
		if ok {
			f, err := decodeU64(v)
			if err != nil {
				return err
			}
			switch f {
			case FormatVersion:
				return nil
			case 3, 4:
				if err := (txn{tx}).addQuotaVersion(); err != nil {
					return fmt.Errorf("upgrade from key-schema version %d: %w", f, err)
				}
				return tx.Put(keyFormat, encodeU64(FormatVersion))
			case 1, 2:
				if f == 1 {
					if err := (txn{tx}).addRefCounts(); err != nil {
						return fmt.Errorf("upgrade from key-schema version 1: %w", err)
					}
				}
				if err := (txn{tx}).addFileParents(); err != nil {
					return fmt.Errorf("upgrade from key-schema version %d: %w", f, err)
				}
				return tx.Put(keyFormat, encodeU64(FormatVersion))
			}
			return fmt.Errorf("key-schema version %d, this build reads %d: %w", f, FormatVersion, ErrInvalid)
		}
		now := s.now().UnixNano()
		root := &inodeRec{Parent: RootIno}
		root.Attr = Attr{Ino: RootIno, Gen: 1, Mode: syscall.S_IFDIR | mode, Uid: opts.RootUid, Gid: opts.RootGid,
			Nlink: 2, Atime: now, Mtime: now, Ctime: now, Change: 1, BlockSize: s.blockSize, Policy: opts.RootPolicy}
		t := txn{tx}
		if err := t.putInode(root); err != nil {
			return err
		}
		if err := t.addCounter(ctrFiles, RootIno, 1); err != nil {
			return err
		}
		if err := tx.Put(keyNext, encodeU64(uint64(RootIno)+1)); err != nil {
			return err
		}
		return tx.Put(keyFormat, encodeU64(FormatVersion))
	})
	if err != nil {
		return nil, fmt.Errorf("meta: open store: %w", err)
	}
	if opts.Shared {
		if err := s.newShared(opts); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// nowNs is the current time in unix nanoseconds.
func (s *Service) nowNs() int64 { return s.now().UnixNano() }

// view runs fn in a read-only transaction.
func (s *Service) view(ctx context.Context, fn func(t txn) error) error {
	return classify(s.store.View(readContext(ctx), func(tx kv.Txn) error { return fn(txn{tx}) }))
}

// classify makes sure every error carries an errno: store failures (closed,
// conflicts that outlived the retries, I/O) become ErrIO.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) || errors.Is(err, ErrConflict) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, ErrIO)
}

// allocIno returns an unused inode number, reserving a new batch in its own
// transaction when the current one is used up.
func (s *Service) allocIno(ctx context.Context) (Ino, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.mu.spare); n > 0 {
		ino := s.mu.spare[n-1]
		s.mu.spare = s.mu.spare[:n-1]
		return ino, nil
	}
	if s.mu.next == s.mu.end {
		var first Ino
		err := s.update(ctx, func(t txn) error {
			v, ok, err := t.Get(keyNext)
			if err != nil {
				return err
			}
			if !ok {
				return corruptf("next-inode counter missing")
			}
			n, err := decodeU64(v)
			if err != nil {
				return err
			}
			first = Ino(n)
			return t.Put(keyNext, encodeU64(n+InoBatch))
		})
		if err != nil {
			return 0, fmt.Errorf("allocate inode: %w", err)
		}
		s.mu.next, s.mu.end = first, first+InoBatch
	}
	ino := s.mu.next
	s.mu.next++
	return ino, nil
}

// releaseIno hands back an inode number allocIno gave that was not used.
func (s *Service) releaseIno(ino Ino) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.spare) < InoBatch {
		s.mu.spare = append(s.mu.spare, ino)
	}
}

// Site returns the site this meta process runs in (Options.Site; "" for
// none).
func (s *Service) Site() string { return s.site }
