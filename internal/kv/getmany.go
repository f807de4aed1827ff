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
