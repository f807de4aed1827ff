package meta

import "context"

// usageHook keeps the usage counters StatFS sums (keys.go, "u" kind
// shard) in the transaction of each change: a file more for each inode
// made, one less and its bytes for each deleted, and every change of a
// file's size. (New counts the root itself.)
func usageHook() hook {
	return hook{name: "usage", inTxn: func(_ context.Context, t txn, e *edit) error {
		switch e.kind {
		case editCreate, editIngest:
			return t.addCounter(ctrFiles, e.rec.Ino, 1)
		case editDelete:
			if e.rec.IsRegular() {
				if err := t.addCounter(ctrBytes, e.rec.Ino, -int64(e.rec.Size)); err != nil {
					return err
				}
			}
			return t.addCounter(ctrFiles, e.rec.Ino, -1)
		case editAttr, editContent:
			return t.addCounter(ctrBytes, e.ino, e.sizeDelta)
		}
		return nil
	}}
}
