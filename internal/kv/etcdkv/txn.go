package etcdkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/google/btree"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// txn is a kv.Txn over one etcd revision, plus (in an Update) a buffer of
// writes and the record of what it read.
type txn struct {
	s            *Store
	ctx          context.Context
	serializable bool
	// local: an Update's first read is answered by the member alone
	// (Options.LocalUpdateReads); its commit's compares check it.
	local bool
	// presume: PresumeAbsent may answer without reading (the first run
	// of an Update's fn); presumed: it did.
	presume, presumed bool
	// useCache: reads may come from the Store's read cache (the first
	// run of an Update's fn); cachedReads: some did (readcache.go).
	useCache, cachedReads bool
	rev                   int64 // the snapshot's revision; 0 until the first read
	done                  bool

	writable bool
	buf      *btree.BTreeG[write] // nil in a View
	gen      uint64               // counts writes, so Scan notices its callback wrote
	// reads maps each key read from the snapshot to its ModRevision (0:
	// absent) and value; ranges are the extents scanned.
	reads  map[string]read
	ranges []span
	// cached are the ranges a Prefetch read whole, pre the keys it read
	// (prefetch.go).
	cached []cachedRange
	pre    map[string]read
	// readErr is the last error a read got from etcd: when fn fails with
	// it, nothing was written, so Update may run fn again.
	readErr error
}

// write is a buffered Put or Delete.
type write struct {
	key, value []byte
	deleted    bool
}

// read is a key as the snapshot held it.
type read struct {
	value   []byte
	present bool
	modRev  int64
}

// span is a scanned key range [start, end) of store keys; a nil end is
// unbounded. rev is the oldest revision its keys were read at when some
// came from the read cache; 0: the snapshot's.
type span struct {
	start, end []byte
	rev        int64
}

func writeLess(a, b write) bool { return bytes.Compare(a.key, b.key) < 0 }

var errDone = errors.New("etcdkv: transaction used after its function returned")

func (t *txn) finish() { t.done = true }

func (t *txn) check(write bool) error {
	if t.done {
		return errDone
	}
	if write && !t.writable {
		return errors.New("etcdkv: write in a read-only transaction")
	}
	return nil
}

// get reads at the snapshot. The first read fixes its revision: it is
// linearizable unless the View asked for Serializable. Later reads name
// that revision, which the member that answered has applied; readAt asks
// any member, and the leader's read index when one has not applied it yet
// (the client spreads its requests over the members).
func (t *txn) get(key string, extra ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	var resp *clientv3.GetResponse
	var err error
	if t.rev == 0 {
		opts := extra
		if t.serializable || t.local {
			opts = append(opts, clientv3.WithSerializable())
		}
		resp, err = t.s.cli.Get(t.ctx, key, opts...)
		if err == nil {
			t.rev = resp.Header.Revision
		}
	} else {
		resp, err = t.s.readAt(t.ctx, t.rev, key, extra...)
	}
	if err != nil {
		t.readErr = err
	}
	return resp, err
}

// Get implements kv.Txn.
func (t *txn) Get(key []byte) ([]byte, bool, error) {
	if err := t.check(false); err != nil {
		return nil, false, err
	}
	if t.buf != nil {
		if w, ok := t.buf.Get(write{key: key}); ok {
			if w.deleted {
				return nil, false, nil
			}
			return w.value, true, nil
		}
	}
	if r, ok := t.reads[string(key)]; ok {
		return r.value, r.present, nil
	}
	if r, ok := t.pre[string(key)]; ok {
		return r.value, r.present, nil
	}
	if t.fromCache(key) {
		r := t.reads[string(key)]
		return r.value, r.present, nil
	}
	resp, err := t.get(t.s.data + string(key))
	if err != nil {
		return nil, false, fmt.Errorf("etcdkv: get %q: %w", key, err)
	}
	var r read
	if len(resp.Kvs) > 0 {
		kv := resp.Kvs[0]
		r = read{value: nonNil(kv.Value), present: true, modRev: kv.ModRevision}
	}
	t.s.rc.learn(string(key), r, t.rev)
	if t.reads != nil {
		t.reads[string(key)] = r
	}
	return r.value, r.present, nil
}

// fromCache records key as read from the Store's read cache, when t may
// use it and the cache knows key; the commit compares its ModRevision.
func (t *txn) fromCache(key []byte) bool {
	if !t.useCache {
		return false
	}
	r, ok := t.s.rc.get(string(key))
	if !ok {
		return false
	}
	t.reads[string(key)] = r
	t.cachedReads = true
	return true
}

// PresumeAbsent implements kv.Presumer: in the first run of an Update's
// fn that has written already (so it will commit, or fail), a key neither
// written, read nor prefetched before is recorded as read absent without
// a round trip; the commit compares its ModRevision with 0, which passes
// only while the key is absent, so a wrong guess is a conflict and fn
// runs again, reading. When fn fails after a presumption, it runs again
// too (Update): its failure may rest on the guess.
func (t *txn) PresumeAbsent(key []byte) (bool, error) {
	if err := t.check(false); err != nil {
		return false, err
	}
	if !t.presume || !t.writable || t.buf.Len() == 0 || t.known(key) {
		_, ok, err := t.Get(key)
		return ok, err
	}
	t.reads[string(key)] = read{}
	t.presumed = true
	return false, nil
}

// known reports whether t wrote, read or prefetched key: Get answers it
// without a round trip.
func (t *txn) known(key []byte) bool {
	if t.buf != nil {
		if _, ok := t.buf.Get(write{key: key}); ok {
			return true
		}
	}
	_, read := t.reads[string(key)]
	_, pre := t.pre[string(key)]
	return read || pre
}

// nonNil keeps a present empty value from reading as absent.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Put implements kv.Txn.
func (t *txn) Put(key, value []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	if len(key) == 0 {
		return errors.New("etcdkv: put: empty key")
	}
	t.buf.ReplaceOrInsert(write{key: bytes.Clone(key), value: append([]byte{}, value...)})
	t.gen++
	return nil
}

// Delete implements kv.Txn.
func (t *txn) Delete(key []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	t.buf.ReplaceOrInsert(write{key: bytes.Clone(key), deleted: true})
	t.gen++
	return nil
}

// Scan implements kv.Txn: the snapshot, page by page, merged with the
// buffer. The buffer is consulted afresh for every key, so writes made by
// fn ahead of the scan are seen and none is visited twice.
func (t *txn) Scan(start, end []byte, fn func(key, value []byte) (bool, error)) error {
	if err := t.check(false); err != nil {
		return err
	}
	it := snapIter{t: t, end: end}
	cur := bytes.Clone(start)
	scannedTo := end // how far the snapshot was read; nil: unbounded
	defer func() {
		if t.reads != nil {
			t.ranges = append(t.ranges, span{start: bytes.Clone(start), end: scannedTo, rev: it.rev})
		}
	}()
	for {
		sk, sv, sok, err := it.peek(cur)
		if err != nil {
			return err
		}
		var w write
		wok := false
		if t.buf != nil {
			t.buf.AscendGreaterOrEqual(write{key: cur}, func(x write) bool {
				if end == nil || bytes.Compare(x.key, end) < 0 {
					w, wok = x, true
				}
				return false
			})
		}
		var key, value []byte
		switch {
		case !sok && !wok:
			return nil
		case wok && (!sok || bytes.Compare(w.key, sk) <= 0):
			key = w.key
			if w.deleted {
				cur = after(key)
				continue
			}
			value = w.value
		default:
			key, value = sk, sv
		}
		cur = after(key)
		more, err := fn(key, value)
		if err != nil {
			return err
		}
		if !more {
			scannedTo = cur
			return nil
		}
	}
}

// after is the smallest key greater than k.
func after(k []byte) []byte { return append(bytes.Clone(k), 0) }

// snapIter walks the snapshot's keys in [.., end) a page at a time.
type snapIter struct {
	t       *txn
	end     []byte
	page    []*snapKV
	i       int
	next    []byte // where the next page starts
	fetched bool   // a page was fetched
	more    bool   // etcd holds keys after page
	// rev is the oldest revision of a page from the read cache, if
	// older than the snapshot's; 0: every page is the snapshot's.
	rev int64
}

type snapKV struct {
	key, value []byte
	modRev     int64
}

// peek returns the first snapshot key >= cur; cur never decreases.
func (it *snapIter) peek(cur []byte) ([]byte, []byte, bool, error) {
	for {
		for it.i < len(it.page) && bytes.Compare(it.page[it.i].key, cur) < 0 {
			it.i++
		}
		if it.i < len(it.page) {
			p := it.page[it.i]
			return p.key, p.value, true, nil
		}
		if it.fetched && !it.more {
			return nil, nil, false, nil
		}
		from := cur
		if it.fetched && bytes.Compare(it.next, cur) > 0 {
			from = it.next
		}
		if err := it.fetch(from); err != nil {
			return nil, nil, false, err
		}
	}
}

func (it *snapIter) fetch(from []byte) error {
	t := it.t
	if page, rev, ok := t.cachedPage(from, it.end); ok {
		if rev != 0 && (it.rev == 0 || rev < it.rev) {
			it.rev = rev
		}
		// Read whole by a Prefetch. A copy, as the next fetch reuses
		// the page; its keys are recorded as read, as a fetch's are.
		it.page, it.i, it.more, it.fetched = append(it.page[:0], page...), 0, false, true
		if t.reads != nil {
			for _, p := range page {
				t.reads[string(p.key)] = read{value: p.value, present: true, modRev: p.modRev}
			}
		}
		it.next = from
		if n := len(it.page); n > 0 {
			it.next = after(it.page[n-1].key)
		}
		return nil
	}
	rangeEnd := clientv3.GetPrefixRangeEnd(t.s.data)
	if it.end != nil {
		rangeEnd = t.s.data + string(it.end)
	}
	resp, err := t.get(t.s.data+string(from), clientv3.WithRange(rangeEnd), clientv3.WithLimit(int64(t.s.opts.ScanPage)))
	if err != nil {
		return fmt.Errorf("etcdkv: scan from %q: %w", from, err)
	}
	it.page, it.i, it.more, it.fetched = it.page[:0], 0, resp.More, true
	for _, kv := range resp.Kvs {
		k := kv.Key[len(t.s.data):]
		p := &snapKV{key: k, value: nonNil(kv.Value), modRev: kv.ModRevision}
		it.page = append(it.page, p)
		if t.reads != nil {
			t.reads[string(k)] = read{value: p.value, present: true, modRev: p.modRev}
		}
	}
	if n := len(it.page); n > 0 {
		it.next = after(it.page[n-1].key)
	} else {
		it.next = from
		it.more = false
	}
	return nil
}
