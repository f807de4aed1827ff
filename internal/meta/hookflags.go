package meta

import "tessera/internal/kv"

// Hook flags: every change runs the write-back hook, which needs the
// fileset ("g") records; most stores have none. A scan of an empty range
// costs an engine like Pebble an iterator over every level (15% of a
// create-stat-unlink cycle's CPU with the quota scan, issue 28), a point
// read of an absent key a bloom-filter probe. So the filesets have a flag,
// "m" "filesets": present once a fileset may exist, never cleared. The
// hook reads the flag and scans only when it is set; the first fileset is
// written in the same transaction as the flag, so a change that read the
// flag absent conflicts with it (optimistic engines) or ran before it (one
// writer). The quotas have a version instead, which also keeps what the
// quota hook found between changes (quota_cache.go, "m" "quotas").
//
// Stores written by a build without the flag: each New sets it when the
// store has filesets (markHookFlags), before it serves anything. Builds
// without the flag cannot open a store of key-schema version 5, so no
// older Service writes filesets beside this one.

var keyFilesetsFlag = []byte("mfilesets")

// hookFlagKeys are the keys the hooks of every change read, for
// prefetches (kv.Prefetch) beside hookRanges: the fileset flag and the
// quota set's version.
func hookFlagKeys() [][]byte { return [][]byte{keyFilesetsFlag, keyQuotas} }

// setHookFlag sets key, a flag, before a record of its kind is written.
func (t txn) setHookFlag(key []byte) error {
	if _, ok, err := t.Get(key); err != nil || ok {
		return err
	}
	return t.Put(key, []byte{recordV1})
}

// hookFlagged reports whether records of key's kind may exist.
func (t txn) hookFlagged(key []byte) (bool, error) {
	_, ok, err := t.Get(key)
	return ok, err
}

// markHookFlags sets the fileset flag when the store has a fileset and no
// flag (a store written before the flag).
func (t txn) markHookFlags() error {
	if ok, err := t.hookFlagged(keyFilesetsFlag); err != nil || ok {
		return err
	}
	found := false
	p := []byte{pfxFileset}
	if err := t.Scan(p, kv.PrefixEnd(p), func(_, _ []byte) (bool, error) { found = true; return false, nil }); err != nil || !found {
		return err
	}
	return t.Put(keyFilesetsFlag, []byte{recordV1})
}
