package client

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"tessera/internal/cachetier"
	"tessera/internal/meta"
)

// tierAPI answers stats — CachedLookup and CachedGetAttr, which the FUSE
// layer's LOOKUP and GETATTR use — from the shared cache tier (DESIGN §7,
// IMCa's cached stat results) before the metadata service, and fills the
// tier with what the service answers to Lookup, GetAttr and Create.
// Everything else passes through, noting what this client changed.
//
// What a cached item may be trusted for: each carries the time its
// attributes were asked of the metadata service, and a client uses it only
// while younger than the attribute TTL of the inode's policy (CacheTTL;
// non-regular files: the FUSE attribute timeout) — the staleness the kernel's
// own attribute cache is allowed anyway. Policies that cache nothing
// (posix, forced, seq-nocache: TTL 0) never use the tier. An item is also
// ignored when it was asked before this client's own last change of that
// inode or directory, so that a client always sees its own changes. Clocks
// of clients sharing a tier are assumed within a small part of the TTL of
// each other (NTP); an item from the future is ignored.
//
// The keys are the inode and parent+name, both holding the inode's
// attributes (one round trip per stat); see cachetier.GetInode and
// GetEntry. Every change this client makes refreshes the inode's item and
// the entry it last looked the inode up or created it under, so that a
// fresh mount does not see, say, the size a file had at its create until
// the TTL runs out (an entry under another name — a hard link, or one this
// client never used — is refreshed by lookups only). A down memcached costs hits,
// never an error: every tier error is a miss.
type tierAPI struct {
	meta.API
	pool     *cachetier.Pool
	ttl      func(in *meta.Inode) time.Duration
	now      func() time.Time
	fills    []chan func() // one per filler; an inode's fills keep their order
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	changed  map[meta.Ino]time.Time // inodes and directories this client changed, when
	names    map[meta.Ino]entryRef  // a name each inode was last looked up or created under
	byName   map[entryRef]meta.Ino  // the inverse of names
	ttls     map[meta.Ino]knownTTL  // what the inodes seen may be trusted for
	pruneAt  time.Time
	hits     atomic.Uint64
	misses   atomic.Uint64
	stopOnce sync.Once
}

// minTierTTL is the shortest attribute TTL worth the tier: an item that
// may be trusted for less (the session policy's 1 s) serves almost no other
// client before it expires, and asking for it costs a round trip on every
// stat (the IMCa stat experiment under session ran at 0.64× without the
// tier). Such inodes are neither filled nor looked up.
const minTierTTL = 2 * time.Second

// knownTTL is what an inode seen may be trusted for (own) and, for a
// directory, what its new entries will be (children: they inherit its
// policy).
type knownTTL struct{ own, children time.Duration }

// otherAttrTTL is the attribute TTL of directories and symlinks, whose
// attributes no policy governs: the FUSE layer's default attribute timeout.
const otherAttrTTL = time.Second

// tierFillQueue bounds the fills waiting to be written; more are dropped.
const tierFillQueue = 1024

// tierFillers write fills to the tier in the background.
const tierFillers = 4

// tierOpTimeout bounds one tier lookup on the stat path; the pool's own
// deadlines bound the rest.
const tierOpTimeout = 200 * time.Millisecond

func newTierAPI(api meta.API, pool *cachetier.Pool, ttl func(*meta.Inode) time.Duration) *tierAPI {
	t := &tierAPI{API: api, pool: pool, ttl: ttl, now: time.Now, done: make(chan struct{}),
		changed: make(map[meta.Ino]time.Time), names: make(map[meta.Ino]entryRef), byName: make(map[entryRef]meta.Ino), ttls: make(map[meta.Ino]knownTTL)}
	for range tierFillers {
		q := make(chan func(), tierFillQueue/tierFillers)
		t.fills = append(t.fills, q)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			for {
				select {
				case fn := <-q:
					fn()
				case <-t.done:
					return
				}
			}
		}()
	}
	return t
}

func (t *tierAPI) stop() {
	t.stopOnce.Do(func() { close(t.done) })
	t.wg.Wait()
}

// attrTTL is how long in's attributes may be trusted.
func (t *tierAPI) attrTTL(in *meta.Inode) time.Duration {
	if !in.IsRegular() {
		return otherAttrTTL
	}
	return t.ttl(in)
}

// encodeTierInode is the tier value for in asked of the service at asked:
// the time (unix ns) and the inode as JSON.
func encodeTierInode(in *meta.Inode, asked time.Time) []byte {
	b, err := json.Marshal(in)
	if err != nil {
		return nil
	}
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(b)), uint64(asked.UnixNano())), b...)
}

func decodeTierInode(v []byte) (meta.Inode, time.Time, bool) {
	var in meta.Inode
	if len(v) < 8 || json.Unmarshal(v[8:], &in) != nil {
		return in, time.Time{}, false
	}
	return in, time.Unix(0, int64(binary.BigEndian.Uint64(v))), true
}

// entryRef is a directory entry: parent directory and name.
type entryRef struct {
	parent meta.Ino
	name   string
}

// maxNames bounds the names remembered for refreshing entry items; past it
// the map starts over (an entry item not refreshed is only as stale as its
// TTL allows).
const maxNames = 1 << 16

// usable reports whether an item about inode ino, whose attributes may be
// trusted for ttl, asked of the service at asked, may answer a stat now:
// young enough, and asked after this client's last change of ino and of
// dir (0: no directory involved).
func (t *tierAPI) usable(ino meta.Ino, ttl time.Duration, asked time.Time, dir meta.Ino) bool {
	now := t.now()
	if ttl <= 0 || asked.After(now) || now.Sub(asked) >= ttl {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.changed[ino]; ok && !asked.After(c) {
		return false
	}
	if c, ok := t.changed[dir]; dir != 0 && ok && !asked.After(c) {
		return false
	}
	return true
}

// touch notes that this client changed these inodes or directories now.
func (t *tierAPI) touch(inos ...meta.Ino) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ino := range inos {
		if ino != 0 {
			t.changed[ino] = now
		}
	}
	// An item older than the longest TTL is never used anyway: forget
	// changes older than that, now and then.
	if now.After(t.pruneAt) {
		for ino, c := range t.changed {
			if now.Sub(c) > time.Hour+time.Minute {
				delete(t.changed, ino)
			}
		}
		t.pruneAt = now.Add(time.Minute)
	}
}

// fill queues the caching of in (and of the entry parent/name when parent
// is not 0), asked of the service at asked. Fills of one inode are written
// in the order queued.
func (t *tierAPI) fill(in meta.Inode, asked time.Time, parent meta.Ino, name string) {
	if in.Ino == 0 {
		return
	}
	t.learn(&in)
	ttl := t.attrTTL(&in)
	if ttl < minTierTTL {
		return
	}
	v := encodeTierInode(&in, asked)
	if v == nil {
		return
	}
	// A change (parent 0) also refreshes the entry the inode was last
	// seen under, so that a lookup there is not answered with the
	// attributes from before the change.
	t.mu.Lock()
	if parent != 0 {
		t.nameLocked(in.Ino, entryRef{parent, name})
	} else if e, ok := t.names[in.Ino]; ok {
		parent, name = e.parent, e.name
	}
	t.mu.Unlock()
	fn := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = t.pool.SetInode(ctx, uint64(in.Ino), in.Change, v, ttl)
		if parent != 0 {
			_ = t.pool.SetEntry(ctx, uint64(parent), name, v, ttl)
		}
	}
	select {
	case t.fills[uint64(in.Ino)%uint64(len(t.fills))] <- fn:
	default: // full: this item is simply not cached
	}
}

// learn records what in may be trusted for.
func (t *tierAPI) learn(in *meta.Inode) {
	k := knownTTL{own: t.attrTTL(in)}
	if in.IsDir() {
		k.children = t.ttl(&meta.Inode{Attr: meta.Attr{Mode: syscall.S_IFREG, Policy: in.Policy}})
	}
	t.mu.Lock()
	if len(t.ttls) >= maxNames {
		t.ttls = make(map[meta.Ino]knownTTL)
	}
	t.ttls[in.Ino] = k
	t.mu.Unlock()
}

// worthAsking reports whether the tier may hold a usable item for inode
// ino (children: for an entry of directory ino): unknown inodes are asked.
func (t *tierAPI) worthAsking(ino meta.Ino, children bool) bool {
	t.mu.Lock()
	k, ok := t.ttls[ino]
	t.mu.Unlock()
	if !ok {
		return true
	}
	if children {
		return k.children >= minTierTTL
	}
	return k.own >= minTierTTL
}

// nameLocked remembers e as the name of ino (replacing what either had).
func (t *tierAPI) nameLocked(ino meta.Ino, e entryRef) {
	if len(t.names) >= maxNames {
		t.names, t.byName = make(map[meta.Ino]entryRef), make(map[entryRef]meta.Ino)
	}
	t.unnameLocked(e)
	if old, ok := t.names[ino]; ok {
		delete(t.byName, old)
	}
	t.names[ino], t.byName[e] = e, ino
}

// unnameLocked forgets the name e (unlinked, or renamed away).
func (t *tierAPI) unnameLocked(e entryRef) (meta.Ino, bool) {
	ino, ok := t.byName[e]
	if ok {
		delete(t.byName, e)
		delete(t.names, ino)
	}
	return ino, ok
}

// getInode returns inode ino from the tier if its item is usable (dir as
// in usable).
func (t *tierAPI) getInode(ctx context.Context, ino, dir meta.Ino) (meta.Inode, bool) {
	tctx, cancel := context.WithTimeout(ctx, tierOpTimeout)
	_, v, ok := t.pool.GetInode(tctx, uint64(ino))
	cancel()
	if !ok {
		return meta.Inode{}, false
	}
	in, asked, ok := decodeTierInode(v)
	if !ok || in.Ino != ino || !t.usable(ino, t.attrTTL(&in), asked, dir) {
		return meta.Inode{}, false
	}
	return in, true
}

// CachedLookup is Lookup answered from the tier when it holds a usable
// item. Only stats use it (the FUSE LOOKUP and GETATTR handlers): the
// client's own reads of attributes — an open's revalidation above all —
// ask the service (Lookup, GetAttr), which also fills the tier.
func (t *tierAPI) CachedLookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	if !t.worthAsking(parent, true) {
		return t.Lookup(ctx, parent, name)
	}
	tctx, cancel := context.WithTimeout(ctx, tierOpTimeout)
	v, ok := t.pool.GetEntry(tctx, uint64(parent), name)
	cancel()
	if ok {
		if in, asked, ok := decodeTierInode(v); ok && t.usable(in.Ino, t.attrTTL(&in), asked, parent) {
			t.hits.Add(1)
			t.learn(&in)
			return in, nil
		}
	}
	t.misses.Add(1)
	return t.Lookup(ctx, parent, name)
}

// CachedGetAttr is GetAttr answered from the tier when it holds a usable
// item (see CachedLookup).
func (t *tierAPI) CachedGetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	if !t.worthAsking(ino, false) {
		return t.GetAttr(ctx, ino)
	}
	if in, ok := t.getInode(ctx, ino, 0); ok {
		t.hits.Add(1)
		return in, nil
	}
	t.misses.Add(1)
	return t.GetAttr(ctx, ino)
}

// Lookup asks the service and fills the tier with the answer.
func (t *tierAPI) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	asked := t.now()
	in, err := t.API.Lookup(ctx, parent, name)
	if err == nil {
		t.fill(in, asked, parent, name)
	}
	return in, err
}

// GetAttr asks the service and fills the tier with the answer.
func (t *tierAPI) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	asked := t.now()
	in, err := t.API.GetAttr(ctx, ino)
	if err == nil {
		t.fill(in, asked, 0, "")
	}
	return in, err
}

// The changes: each notes what it changed once the service answered (so
// that only items asked after the change serve this client), and caches the
// inode it returns (asked before the call: its age is never understated),
// so that other clients' stats see the change rather than an older item.

func (t *tierAPI) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	asked := t.now()
	in, err := t.API.SetAttr(ctx, ino, req)
	t.touch(ino)
	if err == nil {
		t.fill(in, asked, 0, "")
	}
	return in, err
}

func (t *tierAPI) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	asked := t.now()
	in, err := t.API.Create(ctx, req)
	t.touch(req.Parent, in.Ino)
	if err == nil {
		t.fill(in, asked, req.Parent, req.Name)
	}
	return in, err
}

func (t *tierAPI) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	asked := t.now()
	in, err := t.API.Link(ctx, ino, newParent, newName)
	t.touch(ino, newParent)
	if err == nil {
		t.fill(in, asked, newParent, newName)
	}
	return in, err
}

func (t *tierAPI) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	in, err := t.API.Unlink(ctx, parent, name, reap)
	t.touch(parent, in.Ino)
	t.mu.Lock()
	t.unnameLocked(entryRef{parent, name})
	t.mu.Unlock()
	return in, err
}

func (t *tierAPI) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	err := t.API.Rmdir(ctx, parent, name)
	t.touch(parent)
	t.mu.Lock()
	t.unnameLocked(entryRef{parent, name})
	t.mu.Unlock()
	return err
}

func (t *tierAPI) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	in, err := t.API.Rename(ctx, oldParent, oldName, newParent, newName, flags)
	t.touch(oldParent, newParent, in.Ino)
	// Whatever the two names were, they are not what they were: an entry
	// item refreshed under a name gone would keep it alive past its TTL.
	t.mu.Lock()
	t.unnameLocked(entryRef{oldParent, oldName})
	t.unnameLocked(entryRef{newParent, newName})
	t.mu.Unlock()
	return in, err
}

func (t *tierAPI) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	asked := t.now()
	in, err := t.API.Commit(ctx, req)
	t.touch(req.Ino)
	if err == nil {
		t.fill(in, asked, 0, "")
	}
	return in, err
}

func (t *tierAPI) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	err := t.API.SetXattr(ctx, ino, name, value, flags)
	t.touch(ino)
	return err
}

func (t *tierAPI) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	err := t.API.RemoveXattr(ctx, ino, name)
	t.touch(ino)
	return err
}

func (t *tierAPI) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	err := t.API.ReleaseOpen(ctx, ino)
	t.touch(ino) // it may have deleted an orphan
	return err
}

func (t *tierAPI) Reap(ctx context.Context, ino meta.Ino) error {
	err := t.API.Reap(ctx, ino)
	t.touch(ino)
	return err
}
