package kv

// MultiGetter is implemented by the Txns of engines that can read several
// keys in one round trip (etcdkv: one read-only etcd Txn at the
// snapshot's revision). GetMany reads as Get does, key by key: what the
// transaction wrote, else the snapshot.
type MultiGetter interface {
	// GetMany returns the value of each key (nil when absent) and whether
	// it is present, in the order of keys.
	GetMany(keys [][]byte) (values [][]byte, present []bool, err error)
}

// GetMany reads keys in tx: in one call when tx is a MultiGetter, else
// with one Get per key. The values are valid while the transaction runs.
func GetMany(tx Txn, keys [][]byte) ([][]byte, []bool, error) {
	if mg, ok := tx.(MultiGetter); ok {
		return mg.GetMany(keys)
	}
	values := make([][]byte, len(keys))
	present := make([]bool, len(keys))
	for i, k := range keys {
		v, ok, err := tx.Get(k)
		if err != nil {
			return nil, nil, err
		}
		values[i], present[i] = v, ok
	}
	return values, present, nil
}

// Prefetcher is implemented by the Txns of engines that can read several
// keys and small key ranges in one round trip (etcdkv: one read-only
// Txn) and then answer the transaction's Gets and Scans of them without
// asking again. Prefetch changes nothing a later read returns: only when
// it goes to the store.
type Prefetcher interface {
	// Prefetch reads keys and the ranges [Start, End) (a nil End: no
	// bound) at the transaction's snapshot. A range holding more keys
	// than the engine reads at once is left to Scan.
	Prefetch(keys [][]byte, ranges []Range) error
}

// Range is a key range [Start, End); a nil End has no upper bound.
type Range struct{ Start, End []byte }

// Prefetch prefetches keys and ranges in tx when it is a Prefetcher, and
// does nothing otherwise (its Gets and Scans read as they always do).
func Prefetch(tx Txn, keys [][]byte, ranges []Range) error {
	if p, ok := tx.(Prefetcher); ok {
		return p.Prefetch(keys, ranges)
	}
	return nil
}

// Presumer is implemented by the Txns of engines where a read is a round
// trip (etcdkv) and a commit can check a key's absence by itself.
type Presumer interface {
	// PresumeAbsent reports whether key is present, as Get does, but in
	// the first run of an Update's fn it may answer "absent" without
	// reading: the key then counts as read absent, so the commit fails
	// with a conflict, and fn runs again (reading), unless the key is
	// absent when it commits. In a View, or when fn runs again, it reads.
	PresumeAbsent(key []byte) (bool, error)
}

// PresumeAbsent reports whether key is present in tx: through the
// engine's Presumer, which may presume it absent and check that at commit,
// else by Get. For keys that are almost always absent (an orphan marker),
// read only to decide what a transaction writes.
func PresumeAbsent(tx Txn, key []byte) (bool, error) {
	if p, ok := tx.(Presumer); ok {
		return p.PresumeAbsent(key)
	}
	_, ok, err := tx.Get(key)
	return ok, err
}
