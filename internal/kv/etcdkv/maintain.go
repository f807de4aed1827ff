package etcdkv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
)

var _ kv.Maintainer = (*Store)(nil)

// Maintenance of etcd (issue 29): etcd keeps every version of every key
// until the history is compacted, and its backend file never shrinks
// until a member is defragmented. The meta role's leader calls Maintain
// on a schedule. A round notes the current revision, compacts to the
// newest revision an earlier round noted at least Retain ago (so the
// history kept is bounded by Retain plus the rounds' interval, and a
// transaction or watch reading an older revision runs again or resyncs,
// as after etcd's own compaction), then defragments, one member after
// the other, each member whose file has DefragFree bytes free or more.
// The state (the revisions noted, the last compaction and
// defragmentation) is one JSON record under the store's prefix, outside
// its keys: P+"maint", so every meta process sharing the store reports it.

// maintKey is the etcd key of the maintenance record under the prefix.
const maintKey = "maint"

// maxMarks bounds the revisions the record keeps; maxMaintRecord the
// record's size before it is decoded.
const (
	maxMarks       = 64
	maxMaintRecord = 64 << 10
)

// defragTimeout bounds the defragmentation of one member.
const defragTimeout = 5 * time.Minute

// maintRecord is the stored state.
type maintRecord struct {
	Marks        []mark    `json:"marks,omitempty"` // revisions noted by rounds, oldest first
	CompactedRev int64     `json:"compacted_rev,omitempty"`
	CompactedAt  time.Time `json:"compacted_at,omitzero"`
	DefragAt     time.Time `json:"defrag_at,omitzero"`
	DefragMember string    `json:"defrag_member,omitempty"`
	Err          string    `json:"err,omitempty"`
	At           time.Time `json:"at,omitzero"`
}

// mark is a revision a round found current at At.
type mark struct {
	Rev int64     `json:"rev"`
	At  time.Time `json:"at"`
}

func (r *maintRecord) state() kv.Maintenance {
	return kv.Maintenance{CompactedRev: r.CompactedRev, CompactedAt: r.CompactedAt, DefragAt: r.DefragAt,
		DefragMember: r.DefragMember, Err: r.Err, At: r.At}
}

// loadMaint reads the record and the current revision in one Get.
func (s *Store) loadMaint(ctx context.Context) (*maintRecord, int64, error) {
	resp, err := s.cli.Get(clientv3.WithRequireLeader(ctx), s.opts.Prefix+maintKey)
	if err != nil {
		return nil, 0, fmt.Errorf("etcdkv: maintenance record: %w", err)
	}
	rec := &maintRecord{}
	if len(resp.Kvs) > 0 {
		v := resp.Kvs[0].Value
		if len(v) > maxMaintRecord {
			return nil, 0, fmt.Errorf("etcdkv: maintenance record of %d bytes: more than %d", len(v), maxMaintRecord)
		}
		if err := json.Unmarshal(v, rec); err != nil {
			return nil, 0, fmt.Errorf("etcdkv: maintenance record: %w", err)
		}
		if len(rec.Marks) > maxMarks {
			rec.Marks = rec.Marks[len(rec.Marks)-maxMarks:]
		}
		if len(rec.Err) > 1024 {
			rec.Err = rec.Err[:1024]
		}
	}
	return rec, resp.Header.Revision, nil
}

// Maintenance implements kv.Maintainer.
func (s *Store) Maintenance(ctx context.Context) (kv.Maintenance, error) {
	if err := s.check(ctx); err != nil {
		return kv.Maintenance{}, fmt.Errorf("etcdkv: maintenance: %w", err)
	}
	rec, _, err := s.loadMaint(ctx)
	if err != nil {
		return kv.Maintenance{}, err
	}
	return rec.state(), nil
}

// Maintain implements kv.Maintainer; see the comment at the top of this
// file. A failure is recorded (tessera status shows it) and returned.
func (s *Store) Maintain(ctx context.Context, now time.Time, o kv.MaintainOptions) (kv.Maintenance, error) {
	if err := s.check(ctx); err != nil {
		return kv.Maintenance{}, fmt.Errorf("etcdkv: maintain: %w", err)
	}
	rec, cur, err := s.loadMaint(ctx)
	if err != nil {
		return kv.Maintenance{}, err
	}
	rec.At, rec.Err = now, ""
	rec.Marks = append(rec.Marks, mark{Rev: cur, At: now})
	target, keep := int64(0), 0
	for i, m := range rec.Marks {
		if now.Sub(m.At) >= o.Retain {
			target, keep = m.Rev, i+1
		}
	}
	rec.Marks = rec.Marks[keep:]
	if len(rec.Marks) > maxMarks {
		// Keep the oldest (the next to compact to) and the newest.
		rec.Marks = append(rec.Marks[:1], rec.Marks[len(rec.Marks)-maxMarks+1:]...)
	}
	var errs []error
	if target > rec.CompactedRev {
		_, err := s.cli.Compact(ctx, target, clientv3.WithCompactPhysical())
		switch {
		case err == nil || isCompacted(err): // etcd's own compaction got there first
			rec.CompactedRev, rec.CompactedAt = target, now
		default:
			errs = append(errs, fmt.Errorf("compact to revision %d: %w", target, err))
		}
	}
	if err := s.defragment(ctx, rec, now, o.DefragFree); err != nil {
		errs = append(errs, err)
	}
	err = errors.Join(errs...)
	if err != nil {
		rec.Err = err.Error()
		if len(rec.Err) > 1024 {
			rec.Err = rec.Err[:1024]
		}
	}
	v, merr := json.Marshal(rec)
	if merr != nil {
		return rec.state(), errors.Join(err, merr)
	}
	if _, perr := s.cli.Put(clientv3.WithRequireLeader(ctx), s.opts.Prefix+maintKey, string(v)); perr != nil {
		err = errors.Join(err, fmt.Errorf("record maintenance: %w", perr))
	}
	if err != nil {
		return rec.state(), fmt.Errorf("etcdkv: maintain: %w", err)
	}
	return rec.state(), nil
}

// defragment defragments, one at a time, the members with at least free
// bytes of their file free; it stops at the first failure (a member that
// cannot be defragmented now may be down: the next round tries again).
func (s *Store) defragment(ctx context.Context, rec *maintRecord, now time.Time, free int64) error {
	ml, err := s.cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("list members: %w", err)
	}
	for _, m := range ml.Members {
		if len(m.ClientURLs) == 0 {
			continue
		}
		addr := m.ClientURLs[0]
		sctx, cancel := context.WithTimeout(ctx, statusTimeout)
		st, err := s.cli.Status(sctx, addr)
		cancel()
		if err != nil {
			return fmt.Errorf("status of member %s: %w", m.Name, err)
		}
		if free > 0 && st.DbSize-st.DbSizeInUse < free {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, defragTimeout)
		_, err = s.cli.Defragment(dctx, addr)
		cancel()
		if err != nil {
			return fmt.Errorf("defragment member %s: %w", m.Name, err)
		}
		rec.DefragAt, rec.DefragMember = now, m.Name
	}
	return nil
}
