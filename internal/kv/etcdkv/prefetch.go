package etcdkv

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
)

var _ kv.Prefetcher = (*txn)(nil)

// cachedRange is a key range a Prefetch read whole at the snapshot: Scans
// inside it are answered from it (and still recorded, so an Update
// compares the range at commit as after any Scan).
type cachedRange struct {
	start, end []byte // store keys; a nil end is unbounded
	kvs        []*snapKV
	// rev is the revision the range was read at when it came from the
	// read cache (readcache.go); 0: the transaction's snapshot.
	rev int64
}

// Prefetch implements kv.Prefetcher: the keys the transaction neither
// wrote nor read and the ranges not read whole yet go to etcd in one
// read-only Txn at the snapshot (a range as one Get of at most
// Options.ScanPage keys: one that holds more is left to Scan). In an
// Update the keys are recorded as read, as by Get (and compared at
// commit); a range's keys once a Scan reads them.
func (t *txn) Prefetch(keys [][]byte, ranges []kv.Range) error {
	if err := t.check(false); err != nil {
		return err
	}
	var want [][]byte
	for _, key := range keys {
		if t.buf != nil {
			if _, ok := t.buf.Get(write{key: key}); ok {
				continue
			}
		}
		if _, ok := t.reads[string(key)]; ok {
			continue
		}
		if _, ok := t.pre[string(key)]; ok {
			continue
		}
		if t.fromCache(key) {
			continue
		}
		want = append(want, key)
	}
	var rs []kv.Range
	for _, r := range ranges {
		if _, _, ok := t.cachedPage(r.Start, r.End); ok {
			continue
		}
		if t.useCache {
			if c, ok := t.s.rc.span(r.Start, r.End); ok {
				t.cached = append(t.cached, c)
				t.cachedReads = true
				continue
			}
		}
		rs = append(rs, r)
	}
	if n := len(want) + len(rs); n == 0 || n > t.s.opts.MaxTxnOps {
		return nil // nothing to read, or more than one Txn: read as asked
	}
	resp, err := t.readOps(func(opts ...clientv3.OpOption) []clientv3.Op {
		ops := make([]clientv3.Op, 0, len(want)+len(rs))
		for _, k := range want {
			ops = append(ops, clientv3.OpGet(t.s.data+string(k), opts...))
		}
		for _, r := range rs {
			end := clientv3.GetPrefixRangeEnd(t.s.data)
			if r.End != nil {
				end = t.s.data + string(r.End)
			}
			o := append(opts[:len(opts):len(opts)], clientv3.WithRange(end), clientv3.WithLimit(int64(t.s.opts.ScanPage)))
			ops = append(ops, clientv3.OpGet(t.s.data+string(r.Start), o...))
		}
		return ops
	})
	if err != nil {
		return fmt.Errorf("etcdkv: prefetch %d keys and %d ranges: %w", len(want), len(rs), err)
	}
	if len(resp.Responses) != len(want)+len(rs) {
		return fmt.Errorf("etcdkv: prefetch of %d reads: etcd answered %d", len(want)+len(rs), len(resp.Responses))
	}
	for i, key := range want {
		var r read
		if rr := resp.Responses[i].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			r = read{value: nonNil(rr.Kvs[0].Value), present: true, modRev: rr.Kvs[0].ModRevision}
		}
		t.s.rc.learn(string(key), r, t.rev)
		if t.reads != nil {
			t.reads[string(key)] = r // compared at commit, as after a Get
		} else {
			if t.pre == nil {
				t.pre = make(map[string]read, len(want))
			}
			t.pre[string(key)] = r
		}
	}
	for j, r := range rs {
		rr := resp.Responses[len(want)+j].GetResponseRange()
		if rr == nil || rr.More {
			continue // too large to hold: Scan reads it page by page
		}
		c := cachedRange{start: bytes.Clone(r.Start), end: bytes.Clone(r.End)}
		for _, x := range rr.Kvs {
			k := x.Key[len(t.s.data):]
			c.kvs = append(c.kvs, &snapKV{key: k, value: slices.Clip(nonNil(x.Value)), modRev: x.ModRevision}) // clipped: the read cache shares it
		}
		t.cached = append(t.cached, c)
		c.rev = t.rev
		t.s.rc.learnSpan(c)
	}
	return nil
}

// cachedPage returns the snapshot's keys in [from, end) when a Prefetch
// read a range holding all of [from, end) whole, and the revision they
// were read at (0: the snapshot's).
func (t *txn) cachedPage(from, end []byte) ([]*snapKV, int64, bool) {
	for _, c := range t.cached {
		if bytes.Compare(c.start, from) > 0 || !(c.end == nil || (end != nil && bytes.Compare(end, c.end) <= 0)) {
			continue
		}
		i := sort.Search(len(c.kvs), func(i int) bool { return bytes.Compare(c.kvs[i].key, from) >= 0 })
		j := len(c.kvs)
		if end != nil {
			j = i + sort.Search(len(c.kvs)-i, func(n int) bool { return bytes.Compare(c.kvs[i+n].key, end) >= 0 })
		}
		return c.kvs[i:j], c.rev, true
	}
	return nil, 0, false
}
