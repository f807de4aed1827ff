package etcdkv

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
)

var _ kv.MultiGetter = (*txn)(nil)

// GetMany implements kv.MultiGetter: the keys the transaction neither
// wrote nor read before go to etcd in one read-only Txn of Gets (at most
// Options.MaxTxnOps keys a Txn) at the snapshot's revision, so a listing
// with attributes costs one round trip for its attributes, not one per
// entry (issue 29). The first read of a transaction fixes its revision as
// Get's does: the Txn's own. In an Update each key read is recorded, and
// compared at commit, as with Get.
func (t *txn) GetMany(keys [][]byte) ([][]byte, []bool, error) {
	if err := t.check(false); err != nil {
		return nil, nil, err
	}
	values := make([][]byte, len(keys))
	present := make([]bool, len(keys))
	var miss []int
	for i, key := range keys {
		if t.buf != nil {
			if w, ok := t.buf.Get(write{key: key}); ok {
				values[i], present[i] = w.value, !w.deleted
				if w.deleted {
					values[i] = nil
				}
				continue
			}
		}
		if r, ok := t.reads[string(key)]; ok {
			values[i], present[i] = r.value, r.present
			continue
		}
		if r, ok := t.pre[string(key)]; ok {
			values[i], present[i] = r.value, r.present
			continue
		}
		if t.fromCache(key) {
			r := t.reads[string(key)]
			values[i], present[i] = r.value, r.present
			continue
		}
		miss = append(miss, i)
	}
	for len(miss) > 0 {
		chunk := miss[:min(len(miss), t.s.opts.MaxTxnOps)]
		miss = miss[len(chunk):]
		ks := make([]string, len(chunk))
		for j, i := range chunk {
			ks[j] = t.s.data + string(keys[i])
		}
		resp, err := t.getMany(ks)
		if err != nil {
			return nil, nil, fmt.Errorf("etcdkv: get %d keys from %q: %w", len(ks), keys[chunk[0]], err)
		}
		if len(resp.Responses) != len(chunk) {
			return nil, nil, fmt.Errorf("etcdkv: get %d keys: etcd answered %d", len(chunk), len(resp.Responses))
		}
		for j, i := range chunk {
			var r read
			if rr := resp.Responses[j].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
				r = read{value: nonNil(rr.Kvs[0].Value), present: true, modRev: rr.Kvs[0].ModRevision}
			}
			t.s.rc.learn(string(keys[i]), r, t.rev)
			if t.reads != nil {
				t.reads[string(keys[i])] = r
			}
			values[i], present[i] = r.value, r.present
		}
	}
	return values, present, nil
}

// getMany reads the etcd keys in one read-only Txn at the snapshot, as
// get reads one: the first read of the transaction fixes its revision.
func (t *txn) getMany(keys []string) (*clientv3.TxnResponse, error) {
	return t.readOps(func(opts ...clientv3.OpOption) []clientv3.Op { return getOps(keys, opts...) })
}

// readOps sends the read operations build makes (given the options that
// pick the revision and the consistency) as one read-only Txn at the
// snapshot; the first read of the transaction fixes its revision.
func (t *txn) readOps(build func(opts ...clientv3.OpOption) []clientv3.Op) (*clientv3.TxnResponse, error) {
	var resp *clientv3.TxnResponse
	var err error
	if t.rev == 0 {
		var opts []clientv3.OpOption
		if t.serializable || t.local {
			opts = append(opts, clientv3.WithSerializable())
		}
		resp, err = t.s.cli.Txn(t.ctx).Then(build(opts...)...).Commit()
		if err == nil {
			t.rev = resp.Header.Revision
		}
	} else {
		resp, err = t.s.readOpsAt(t.ctx, t.rev, build)
	}
	if err != nil {
		t.readErr = err
	}
	return resp, err
}

func getOps(keys []string, opts ...clientv3.OpOption) []clientv3.Op {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k, opts...)
	}
	return ops
}
