package meta

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv/memkv"
)

var (
	quotaSeed  = flag.Uint64("quota-seed", 0, "seed of TestQuotaModel (0: a new one, logged)")
	quotaSteps = flag.Int("quota-steps", 1500, "steps of TestQuotaModel")
)

func newQuotaService(t *testing.T) *Service {
	t.Helper()
	// A clock that stands still: the model's session never expires.
	now := time.Unix(1e9, 0)
	s, err := New(memkv.New(), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mkdir(t *testing.T, s *Service, dir Ino, name string) Ino {
	t.Helper()
	in, err := s.Create(context.Background(), CreateReq{Parent: dir, Name: name, Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	return in.Ino
}

// TestQuotaRefuses: creates and writes past a directory quota's limits
// fail with EDQUOT and change nothing; lowering usage is always allowed;
// a nested directory counts in every quota above it.
func TestQuotaRefuses(t *testing.T) {
	ctx := context.Background()
	s := newQuotaService(t)
	a := mkdir(t, s, RootIno, "a")
	if _, err := s.SetQuota(ctx, Quota{Dir: a, MaxInodes: 3, MaxBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	sub := mkdir(t, s, a, "sub")
	f, err := s.Create(ctx, CreateReq{Parent: sub, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Create(ctx, CreateReq{Parent: a, Name: "g", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, CreateReq{Parent: sub, Name: "h", Mode: syscall.S_IFREG | 0o644}); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("a fourth inode under a quota of 3: %v, want EDQUOT", err)
	}
	if _, err := s.Lookup(ctx, sub, "h"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused create left %v", err)
	}
	if _, err := s.Commit(ctx, CommitReq{Ino: f.Ino, Size: 1000, SetSize: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, CommitReq{Ino: f.Ino, Size: 1001, SetSize: true}); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("a write past 1000 bytes: %v, want EDQUOT", err)
	}
	if _, err := s.SetAttr(ctx, f.Ino, SetAttrReq{Valid: SetSize, Size: 1500}); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("a truncate up past 1000 bytes: %v, want EDQUOT", err)
	}
	if _, err := s.SetAttr(ctx, f.Ino, SetAttrReq{Valid: SetSize, Size: 10}); err != nil {
		t.Fatalf("a truncate down: %v", err)
	}
	q, err := s.Quota(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if q.Inodes != 3 || q.Bytes != 10 {
		t.Fatalf("usage %d inodes, %d bytes; want 3, 10", q.Inodes, q.Bytes)
	}
	if _, err := s.Unlink(ctx, a, "g", g.Ino); err != nil { // not open: deleted
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, CreateReq{Parent: sub, Name: "h", Mode: syscall.S_IFREG | 0o644}); err != nil {
		t.Fatalf("a create after an unlink made room: %v", err)
	}
	other := mkdir(t, s, RootIno, "other")
	if _, err := s.Rename(ctx, a, "sub", other, "sub", 0); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("a directory renamed out of a quota tree: %v, want EXDEV", err)
	}
	if _, err := s.Link(ctx, f.Ino, other, "f2"); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("a hard link out of a quota tree: %v, want EXDEV", err)
	}
	// An O_TMPFILE inode counts where it was made: naming it in another
	// quota tree would leave its usage behind.
	tmp, err := s.Create(ctx, CreateReq{Parent: other, Mode: syscall.S_IFREG | 0o600, Tmpfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Link(ctx, tmp.Ino, sub, "tmp"); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("an O_TMPFILE inode named in a quota tree: %v, want EXDEV", err)
	}
	if _, err := s.Link(ctx, tmp.Ino, other, "tmp"); err != nil {
		t.Fatalf("an O_TMPFILE inode named where it was made: %v", err)
	}
}

// TestQuotaModel applies random changes (creates, writes, truncates,
// renames across quota trees, hard links, unlinks of open files, rmdirs,
// reaps) and checks after each that every quota's usage equals a walk of
// its tree.
func TestQuotaModel(t *testing.T) {
	seed := *quotaSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("replay with -quota-seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	s := newQuotaService(t)
	si, err := s.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sess := s.WithSession(si.ID)
	a := mkdir(t, s, RootIno, "a")
	c := mkdir(t, s, a, "c")
	b := mkdir(t, s, RootIno, "b")
	d := mkdir(t, s, RootIno, "d") // no quota
	dirs := []Ino{RootIno, a, c, b, d}
	for _, q := range []Quota{{Dir: a}, {Dir: c, MaxInodes: 40, MaxBytes: 3 << 20}, {Dir: b, MaxBytes: 2 << 20}} {
		if _, err := s.SetQuota(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var open []Ino // orphans the session holds open
	pick := func() Ino { return dirs[rng.IntN(len(dirs))] }
	// entry returns a random entry of a random directory (ok false: none).
	entry := func(files bool) (Ino, DirEntry, bool) {
		dir := pick()
		ents, _, err := s.ReadDir(ctx, dir, "", 0, false)
		if errors.Is(err, ErrNotFound) {
			return 0, DirEntry{}, false // removed
		}
		if err != nil {
			t.Fatal(err)
		}
		var cands []DirEntry
		for _, e := range ents {
			if (e.Mode&syscall.S_IFMT == syscall.S_IFDIR) != files {
				cands = append(cands, e)
			}
		}
		if len(cands) == 0 {
			return 0, DirEntry{}, false
		}
		return dir, cands[rng.IntN(len(cands))], true
	}
	allowed := func(err error) error {
		for _, e := range []error{syscall.EDQUOT, syscall.EXDEV, ErrExist, ErrNotEmpty, ErrInvalid, ErrNotFound, ErrIsDir, ErrNotDir} {
			if errors.Is(err, e) {
				return nil
			}
		}
		return err
	}
	var done, refused [11]int
	for step := range *quotaSteps {
		name := fmt.Sprintf("n%d", rng.IntN(40))
		var err error
		op := rng.IntN(11)
		switch op {
		case 0, 1:
			_, err = s.Create(ctx, CreateReq{Parent: pick(), Name: name, Mode: syscall.S_IFREG | 0o644})
		case 2:
			var in Inode
			if in, err = s.Create(ctx, CreateReq{Parent: pick(), Name: "d" + name, Mode: syscall.S_IFDIR | 0o755}); err == nil && len(dirs) < 30 {
				dirs = append(dirs, in.Ino)
			}
		case 3, 4:
			if _, e, ok := entry(true); ok {
				_, err = s.Commit(ctx, CommitReq{Ino: e.Ino, Size: rng.Uint64N(600 << 10), SetSize: true})
			}
		case 5:
			if _, e, ok := entry(true); ok {
				_, err = s.SetAttr(ctx, e.Ino, SetAttrReq{Valid: SetSize, Size: rng.Uint64N(100 << 10)})
			}
		case 6:
			if dir, e, ok := entry(rng.IntN(3) > 0); ok {
				_, err = s.Rename(ctx, dir, e.Name, pick(), name, 0)
			}
		case 7:
			if _, e, ok := entry(true); ok {
				_, err = s.Link(ctx, e.Ino, pick(), name)
			}
		case 8:
			if dir, e, ok := entry(true); ok {
				// Held open by the session half the time: an orphan.
				if rng.IntN(2) == 0 {
					if _, err = sess.HoldOpen(ctx, e.Ino); err != nil {
						break
					}
					open = append(open, e.Ino)
				}
				_, err = sess.Unlink(ctx, dir, e.Name, e.Ino)
			}
		case 9:
			if len(open) > 0 {
				i := rng.IntN(len(open))
				err = sess.ReleaseOpen(ctx, open[i])
				open = append(open[:i], open[i+1:]...)
			}
		case 10:
			if dir, e, ok := entry(false); ok {
				err = s.Rmdir(ctx, dir, e.Name)
			}
		}
		if errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EXDEV) {
			refused[op]++
		} else if err == nil {
			done[op]++
		}
		if err = allowed(err); err != nil {
			t.Fatalf("step %d (op %d): %v", step, op, err)
		}
		checkQuotas(t, s, step)
	}
	// create, create, mkdir, commit, commit, truncate, rename, link,
	// unlink, release, rmdir
	t.Logf("done by op %v; refused (EDQUOT, EXDEV) %v", done, refused)
}

// checkQuotas compares every quota's usage with a walk of its tree
// (CheckQuota, what fsck does).
func checkQuotas(t *testing.T, s *Service, step int) {
	t.Helper()
	qs, err := s.Quotas(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		c, err := s.CheckQuota(context.Background(), q.Dir)
		if err != nil {
			t.Fatalf("step %d: check of %d: %v", step, q.Dir, err)
		}
		if c.Quota != q || !c.Agrees() {
			t.Fatalf("step %d: quota of %d counts %d inodes, %d bytes; the walk %d, %d", step, q.Dir, q.Inodes, q.Bytes, c.WalkInodes, c.WalkBytes)
		}
	}
}

// TestCheckQuotaFindsDrift: a usage record that no longer matches its tree
// (written behind the quota hook's back) is what CheckQuota reports, and
// a directory without a quota is ErrNotFound.
func TestCheckQuotaFindsDrift(t *testing.T) {
	ctx := context.Background()
	s, err := New(memkv.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "q", Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Create(ctx, CreateReq{Parent: dir.Ino, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetAttr(ctx, f.Ino, SetAttrReq{Valid: SetSize, Size: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckQuota(ctx, dir.Ino); !errors.Is(err, ErrNotFound) {
		t.Fatalf("check of a directory without a quota: %v; want ErrNotFound", err)
	}
	if _, err := s.SetQuota(ctx, Quota{Dir: dir.Ino, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	c, err := s.CheckQuota(ctx, dir.Ino)
	if err != nil || !c.Agrees() || c.WalkBytes != 1000 || c.WalkInodes != 1 {
		t.Fatalf("check after set: %+v, %v; want 1 inode, 1000 bytes, agreeing", c, err)
	}
	err = s.update(ctx, func(t txn) error { return t.Put(usageKey(dir.Ino), encodePair(7, 1)) })
	if err != nil {
		t.Fatal(err)
	}
	c, err = s.CheckQuota(ctx, dir.Ino)
	if err != nil || c.Agrees() || c.Bytes != 7 || c.WalkBytes != 1000 {
		t.Fatalf("check after the usage drifted to 7 bytes: %+v, %v; want the drift reported", c, err)
	}
}
