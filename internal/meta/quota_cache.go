package meta

import (
	"fmt"
	"sync"
)

// The quota hook's reads, kept between changes (issue 26: a quota on the
// tree costs a change little).
//
// Every change reads the quota set; with it in hand, the hook walks the
// parent pointers from the changed inode's directory up to the root to
// find the quota directories above it. Both are kept in the Service
// between changes, valid for one version of the quota set: the record
// "m" "quotas" (keyQuotas), which every write of a quota's limits and
// every removal of a quota bumps, in the same transaction. A change reads
// that one key instead of scanning the "Q" range (absent: no quota at
// all, the common case), so a change that sees a version another change
// or another meta service has since bumped conflicts on it (etcd) or
// cannot exist (pebble: one transaction at a time).
//
// A directory's chain (the quota directories at or above it) is the same
// for one version of the set: a rename may move a directory only between
// places with the same quota directories above them (moveQuotas, EXDEV
// otherwise), and parent pointers change in no other way. Inode numbers
// are never reused, so the chain of a directory that is removed, or that
// a transaction created and then aborted, is never asked for again. At
// most quotaChainsMax chains are kept (a full cache starts over): 64 Ki
// directories of about 40 bytes each.
//
// A store that is not shared (Options.Shared false: pebble, bolt, memkv)
// has one writer, this Service, and runs its Updates one at a time: there
// the cache is the truth from the first read of the version until this
// Service changes the set, and a change reads nothing for it.

// keyQuotas holds the quota set's version (8 bytes); absent while there
// has never been a quota.
var keyQuotas = []byte("mquotas")

// quotaChainsMax bounds the chains kept.
const quotaChainsMax = 1 << 16

// quotaCache is the quota set and the directories' chains at one version.
type quotaCache struct {
	mu      sync.Mutex
	version uint64
	limits  []Quota // usage not kept: a change reads what it charges
	chains  map[Ino][]Ino
	// exclusive: the store has no other writer (Options.Shared false);
	// known: then the version is the store's, no need to read it.
	exclusive, known bool
}

// quotaSet returns the quota records for a change (usage not read; nil
// when there is none) and the set's version (0: none), from the cache
// when it holds that version.
func (t txn) quotaSet() (map[Ino]*quotaState, uint64, error) {
	s, cs := t.changes()
	if s != nil && cs.quotasChanged {
		// This change wrote the set: what it reads is not committed yet.
		qs, err := t.readQuotas()
		return qs, 0, err
	}
	if s != nil {
		if qs, ver, ok := s.quotaCache.current(); ok {
			return qs, ver, nil
		}
	}
	v, ok, err := t.Get(keyQuotas)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		if s != nil {
			s.quotaCache.store(0, nil)
		}
		return nil, 0, nil
	}
	ver, err := decodeU64(v)
	if err != nil {
		return nil, 0, err
	}
	if s != nil {
		if qs, ok := s.quotaCache.set(ver); ok {
			return qs, ver, nil
		}
	}
	qs, err := t.readQuotas()
	if err != nil {
		return nil, 0, err
	}
	if s != nil {
		s.quotaCache.store(ver, qs)
	}
	return qs, ver, nil
}

// bumpQuotas records a change of the quota set in t: the caches of every
// meta service start over at their next change.
func (t txn) bumpQuotas() error {
	var ver uint64
	v, ok, err := t.Get(keyQuotas)
	if err != nil {
		return err
	}
	if ok {
		if ver, err = decodeU64(v); err != nil {
			return err
		}
	}
	s, cs := t.changes()
	if s == nil {
		return fmt.Errorf("meta: quota records changed outside a change transaction: %w", ErrIO)
	}
	s.quotaCache.forget()
	cs.quotaVersion, cs.quotasChanged = 0, true // what it reads from now on is its own
	return t.Put(keyQuotas, encodeU64(ver+1))
}

// current returns fresh quota states and their version when the store
// has no other writer and the cache knows its version.
func (c *quotaCache) current() (map[Ino]*quotaState, uint64, bool) {
	c.mu.Lock()
	ok, ver := c.exclusive && c.known, c.version
	c.mu.Unlock()
	if !ok {
		return nil, 0, false
	}
	if ver == 0 {
		return nil, 0, true
	}
	qs, ok := c.set(ver)
	return qs, ver, ok
}

// forget drops what the cache knows: the set is changing.
func (c *quotaCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version, c.known, c.limits, c.chains = 0, false, nil, nil
}

// set returns fresh quota states of version ver, if the cache holds it.
func (c *quotaCache) set(ver uint64) (map[Ino]*quotaState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != ver || ver == 0 {
		return nil, false
	}
	if len(c.limits) == 0 {
		return nil, true
	}
	qs := make(map[Ino]*quotaState, len(c.limits))
	for _, q := range c.limits {
		qs[q.Dir] = &quotaState{Quota: q}
	}
	return qs, true
}

// store keeps the set qs read at version ver (and forgets the chains of
// another version).
func (c *quotaCache) store(ver uint64, qs map[Ino]*quotaState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known = true
	if c.version == ver && c.chains != nil {
		return
	}
	c.version, c.limits, c.chains = ver, c.limits[:0], map[Ino][]Ino{}
	for _, q := range qs {
		c.limits = append(c.limits, Quota{Dir: q.Dir, MaxBytes: q.MaxBytes, MaxInodes: q.MaxInodes})
	}
}

// chain returns dir's chain at version ver, if kept.
func (c *quotaCache) chain(ver uint64, dir Ino) ([]Ino, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != ver || ver == 0 {
		return nil, false
	}
	ch, ok := c.chains[dir]
	return ch, ok
}

// keepChain keeps dir's chain found at version ver.
func (c *quotaCache) keepChain(ver uint64, dir Ino, chain []Ino) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != ver || ver == 0 {
		return
	}
	if len(c.chains) >= quotaChainsMax {
		c.chains = map[Ino][]Ino{}
	}
	c.chains[dir] = chain
}

// addQuotaVersion gives a store of an earlier key-schema version that has
// quotas the quota set's version (the upgrade to FormatVersion 5).
func (t txn) addQuotaVersion() error {
	qs, err := t.readQuotas()
	if err != nil || len(qs) == 0 {
		return err
	}
	return t.Put(keyQuotas, encodeU64(1))
}
