package meta

// Appending to the queue, with the two reductions made at once, in the
// change's transaction: a Put (or Setattr) of a file whose latest queued
// operation is an unclaimed one of the same kind at the same path
// coalesces into it (a Put reads the file's content when it is applied, so
// one Put carries every write before it), and the removal of a file or
// symlink whose latest operation is its unclaimed creation at the same
// path cancels both. An operation some applier has claimed (Owner set) is
// never changed: its change after the claim gets an entry of its own.

func (s *Service) wbAppend(t txn, f Fileset, op *WBOp) error {
	now := s.nowNs()
	latest, err := t.wbLatestOp(op.Ino)
	if err != nil {
		return err
	}
	if l := latest; l != nil && l.Owner == "" && !l.Permanent && l.Root == f.Root && l.Path == op.Path {
		switch {
		case op.Kind == OpPut && l.Kind == OpPut,
			op.Kind == OpSetattr && l.Kind == OpSetattr:
			l.Ver++
			l.Mode, l.Mtime = op.Mode, op.Mtime
			return t.Put(wbQueueKey(l.Root, l.Seq), encodeWBOp(l))
		case op.Kind == OpSetattr && l.Kind == OpPut:
			// A Put sets the mode and time too.
			l.Ver++
			l.Mode, l.Mtime = op.Mode, op.Mtime
			return t.Put(wbQueueKey(l.Root, l.Seq), encodeWBOp(l))
		case op.Kind == OpRemove && (l.Kind == OpPut && l.New || l.Kind == OpSymlink):
			if err := t.Delete(wbQueueKey(l.Root, l.Seq)); err != nil {
				return err
			}
			return t.Delete(wbKey(wbLatest, op.Ino))
		}
	}
	seq, err := t.wbNextSeq(f.Root)
	if err != nil {
		return err
	}
	op.Root, op.Seq, op.At = f.Root, seq, now
	if err := t.Put(wbQueueKey(f.Root, seq), encodeWBOp(op)); err != nil {
		return err
	}
	return t.Put(wbKey(wbLatest, op.Ino), encodeWBLatest(f.Root, seq))
}

// wbLatestOp returns the latest queued operation of ino, nil if it has
// none queued any more.
func (t txn) wbLatestOp(ino Ino) (*WBOp, error) {
	v, ok, err := t.Get(wbKey(wbLatest, ino))
	if err != nil || !ok {
		return nil, err
	}
	root, seq, err := decodeWBLatest(v)
	if err != nil {
		return nil, err
	}
	return t.wbOp(root, seq)
}

// wbOp loads a queued operation, nil if absent.
func (t txn) wbOp(root Ino, seq uint64) (*WBOp, error) {
	v, ok, err := t.Get(wbQueueKey(root, seq))
	if err != nil || !ok {
		return nil, err
	}
	return decodeWBOp(root, seq, v)
}

func (t txn) wbNextSeq(root Ino) (uint64, error) {
	k := wbKey(wbNext, root)
	v, ok, err := t.Get(k)
	if err != nil {
		return 0, err
	}
	var next uint64 = 1
	if ok {
		if next, err = decodeU64(v); err != nil {
			return 0, err
		}
	}
	return next, t.Put(k, encodeU64(next+1))
}
