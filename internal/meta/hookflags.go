package meta

import "tessera/internal/kv"

// Hook flags: every change runs the write-back and quota hooks, which
// need the fileset ("g") and quota ("Q") records; most stores have none.
// A scan of an empty range costs an engine like Pebble an iterator over
// every level (15% of a create-stat-unlink cycle's CPU, issue 28), a
// point read of an absent key a bloom-filter probe. So each kind has a
// flag, "m" "filesets" and "m" "quotas": present once a record of the
// kind may exist, never cleared. The hooks read the flag and scan only
// when it is set; the first record of a kind is written in the same
// transaction as its flag, so a change that read the flag absent
// conflicts with it (optimistic engines) or ran before it (one writer).
//
// Stores written by a build without flags: each New sets the flag of a
// kind that has records (markHookFlags), before it serves anything; a
// mixed-version shared store (an older Service writing records next to
// this one) is not covered.

var (
	keyFilesetsFlag = []byte("mfilesets")
	keyQuotasFlag   = []byte("mquotas")
)

// hookFlagKeys are the flags the hooks of every change read, for
// prefetches (kv.Prefetch) beside hookRanges.
func hookFlagKeys() [][]byte { return [][]byte{keyFilesetsFlag, keyQuotasFlag} }

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

// markHookFlags sets the flag of each kind that has a record and no flag
// (a store written before the flags).
func (t txn) markHookFlags() error {
	for _, k := range []struct {
		flag []byte
		pfx  byte
	}{{keyFilesetsFlag, pfxFileset}, {keyQuotasFlag, pfxQuota}} {
		ok, err := t.hookFlagged(k.flag)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		found := false
		p := []byte{k.pfx}
		if err := t.Scan(p, kv.PrefixEnd(p), func(_, _ []byte) (bool, error) { found = true; return false, nil }); err != nil {
			return err
		}
		if found {
			if err := t.Put(k.flag, []byte{recordV1}); err != nil {
				return err
			}
		}
	}
	return nil
}
