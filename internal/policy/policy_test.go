package policy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/policy"
)

// fakeFile is one open handle: it counts what the hooks ask of it.
type fakeFile struct {
	ino         uint64
	size        int64
	committed   bool
	dirty       int
	commits     int
	revalidates int
}

func (f *fakeFile) Ino() uint64     { return f.ino }
func (f *fakeFile) Size() int64     { return f.size }
func (f *fakeFile) Committed() bool { return f.committed }
func (f *fakeFile) Dirty() int      { return f.dirty }
func (f *fakeFile) Commit(ctx context.Context) error {
	f.commits++
	f.dirty = 0
	return nil
}
func (f *fakeFile) Revalidate(ctx context.Context) error {
	f.revalidates++
	return nil
}

// write runs one write of n bytes at the end of f through p's hooks, as the
// client does.
func write(t *testing.T, p policy.Hooks, f *fakeFile, flags, n int) error {
	t.Helper()
	ctx := context.Background()
	op := policy.Op{Flags: flags, Off: f.size, Len: int64(n)}
	if err := p.PreWrite(ctx, f, op); err != nil {
		return err
	}
	f.dirty++
	f.size += int64(n)
	return p.PostWrite(ctx, f, op)
}

func lookup(t *testing.T, name string) policy.Policy {
	t.Helper()
	p, err := policy.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLookupEveryName(t *testing.T) {
	want := []string{"forced", "immutable", "nfs", "posix", "relaxed", "seq-nocache", "session"}
	if got := policy.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		p := lookup(t, name)
		if p.Name() != name {
			t.Errorf("Lookup(%q).Name() = %q", name, p.Name())
		}
		if err := p.Knobs().Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
	if len(policy.All()) != len(want) {
		t.Errorf("All() has %d presets, want %d", len(policy.All()), len(want))
	}
	if p := lookup(t, policy.Default); p.Knobs().Commit != policy.CommitOnSync || !p.Knobs().CloseToOpen {
		t.Errorf("default %s is not close-to-open: %s", policy.Default, policy.Describe(p))
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, name := range []string{"x", "", "POSIX", "session "} {
		p, err := policy.Lookup(name)
		if p != nil || !errors.Is(err, policy.ErrUnknownPolicy) {
			t.Fatalf("Lookup(%q) = %v, %v; want ErrUnknownPolicy", name, p, err)
		}
	}
	_, err := policy.Lookup("x")
	want := `unknown policy "x": valid policies are posix, seq-nocache, forced, relaxed, session, nfs, immutable`
	if err.Error() != want {
		t.Fatalf("error text\n got %s\nwant %s", err, want)
	}
}

func TestPresetKnobs(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"posix", "commit=each-write conflict=retry cache=coherent reads=local durability=majority"},
		{"seq-nocache", "commit=each-write conflict=retry cache=none reads=synchronized durability=majority"},
		{"forced", "commit=each-write conflict=force cache=coherent reads=local durability=majority"},
		{"relaxed", "commit=on-sync conflict=force cache=timed(1m0s) reads=local durability=majority meta=nearby"},
		{"session", "commit=on-sync conflict=retry cache=timed(1s) open=revalidate reads=local durability=majority meta=nearby"},
		{"nfs", "commit=on-sync conflict=force cache=timed(3s) reads=local durability=majority meta=nearby"},
		{"immutable", "commit=on-sync conflict=retry cache=forever reads=local durability=majority write-once"},
	} {
		if got := policy.Describe(lookup(t, c.name)); got != c.want {
			t.Errorf("Describe(%s)\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestCommitOnWrite(t *testing.T) {
	for _, c := range []struct {
		policy  string
		flags   int
		commits int // after three writes
	}{
		{"posix", syscall.O_WRONLY, 3},
		{"forced", syscall.O_RDWR, 3},
		{"session", syscall.O_WRONLY, 0},
		{"nfs", syscall.O_WRONLY, 0},
		{"session", syscall.O_WRONLY | syscall.O_SYNC, 3},  // rNFS synchronized writes
		{"relaxed", syscall.O_WRONLY | syscall.O_DSYNC, 3}, // data sync is enough
		{"session", syscall.O_WRONLY | syscall.O_APPEND, 0},
	} {
		p := lookup(t, c.policy)
		f := &fakeFile{ino: 9}
		for range 3 {
			if err := write(t, p, f, c.flags, 100); err != nil {
				t.Fatal(err)
			}
		}
		if f.commits != c.commits {
			t.Errorf("%s flags %#x: %d commits after 3 writes, want %d", c.policy, c.flags, f.commits, c.commits)
		}
	}
}

func TestRevalidate(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		policy      string
		flags       int
		open, reads int // revalidations by one open and two reads
	}{
		{"session", syscall.O_RDONLY, 1, 0},
		{"nfs", syscall.O_RDONLY, 0, 0},
		{"posix", syscall.O_RDONLY, 0, 0},
		{"relaxed", syscall.O_RDONLY, 0, 0},
		{"seq-nocache", syscall.O_RDONLY, 1, 2},
		{"posix", syscall.O_RDONLY | syscall.O_RSYNC, 0, 2},
		{"nfs", syscall.O_RDWR | syscall.O_RSYNC, 0, 2},
		// On Linux O_RSYNC == O_SYNC: an O_SYNC handle reads synchronized.
		{"nfs", syscall.O_RDWR | syscall.O_SYNC, 0, 2},
		{"nfs", syscall.O_RDWR | syscall.O_DSYNC, 0, 0},
	} {
		p := lookup(t, c.policy)
		f := &fakeFile{ino: 3, size: 10, committed: true}
		op := policy.Op{Flags: c.flags}
		if err := p.PreOpen(ctx, f, op); err != nil {
			t.Fatal(err)
		}
		opened := f.revalidates
		for range 2 {
			if err := p.PreRead(ctx, f, policy.Op{Flags: c.flags, Len: 4}); err != nil {
				t.Fatal(err)
			}
		}
		if opened != c.open || f.revalidates-opened != c.reads {
			t.Errorf("%s flags %#x: revalidated %d at open and %d on reads, want %d and %d",
				c.policy, c.flags, opened, f.revalidates-opened, c.open, c.reads)
		}
	}
}

func TestImmutable(t *testing.T) {
	ctx := context.Background()
	p := lookup(t, "immutable")
	// The first handle writes the content; nothing is committed before close.
	first := &fakeFile{ino: 42}
	for range 2 {
		if err := write(t, p, first, syscall.O_WRONLY|syscall.O_CREAT, 10); err != nil {
			t.Fatalf("first handle's write: %v", err)
		}
	}
	if first.commits != 0 {
		t.Fatalf("%d commits before close", first.commits)
	}
	// A second handle finds it committed: no write, no truncating open.
	second := &fakeFile{ino: 42, size: 20, committed: true}
	err := write(t, p, second, syscall.O_WRONLY, 1)
	if !errors.Is(err, policy.ErrImmutable) || !errors.Is(err, syscall.EPERM) || !strings.Contains(err.Error(), "inode 42") {
		t.Fatalf("second write: %v, want ErrImmutable (EPERM) naming inode 42", err)
	}
	if second.size != 20 || second.dirty != 0 {
		t.Fatalf("refused write changed the file: size %d dirty %d", second.size, second.dirty)
	}
	if err := p.PreOpen(ctx, second, policy.Op{Flags: syscall.O_WRONLY | syscall.O_TRUNC}); !errors.Is(err, policy.ErrImmutable) {
		t.Fatalf("truncating open: %v, want ErrImmutable", err)
	}
	if err := p.PreOpen(ctx, second, policy.Op{Flags: syscall.O_RDONLY}); err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	// A new file may be created with O_TRUNC.
	if err := p.PreOpen(ctx, &fakeFile{ino: 43}, policy.Op{Flags: syscall.O_WRONLY | syscall.O_CREAT | syscall.O_TRUNC}); err != nil {
		t.Fatalf("creating open: %v", err)
	}
	// Other policies let the second handle write.
	if err := write(t, lookup(t, "session"), &fakeFile{ino: 42, size: 20, committed: true}, syscall.O_WRONLY, 1); err != nil {
		t.Fatalf("session write to a committed file: %v", err)
	}
}

func TestPeriodicCount(t *testing.T) {
	p := policy.NewBase("every-3", policy.Knobs{Commit: policy.CommitPeriodic, CommitWrites: 3, CommitEvery: time.Second})
	if err := p.Knobs().Validate(); err != nil {
		t.Fatal(err)
	}
	f := &fakeFile{ino: 5}
	var after []int
	for range 7 {
		if err := write(t, p, f, syscall.O_WRONLY, 1); err != nil {
			t.Fatal(err)
		}
		after = append(after, f.commits)
	}
	if want := []int{0, 0, 1, 1, 1, 2, 2}; !slices.Equal(after, want) {
		t.Fatalf("commits after each write %v, want %v", after, want)
	}
	// With only a period, writes never commit by count: the timer is the client's.
	timed := policy.NewBase("every-1s", policy.Knobs{Commit: policy.CommitPeriodic, CommitEvery: time.Second})
	g := &fakeFile{ino: 6}
	for range 10 {
		if err := write(t, timed, g, syscall.O_WRONLY, 1); err != nil {
			t.Fatal(err)
		}
	}
	if g.commits != 0 {
		t.Fatalf("%d commits by count with no count limit", g.commits)
	}
	if got, want := policy.Describe(p), "commit=periodic(1s or 3 writes) conflict=retry cache=none reads=local durability=majority"; got != want {
		t.Fatalf("Describe\n got %s\nwant %s", got, want)
	}
}

func TestSyncAndCloseHooksDoNothing(t *testing.T) {
	ctx := context.Background()
	for _, name := range policy.Names() {
		p := lookup(t, name)
		f := &fakeFile{ino: 1, dirty: 3}
		for _, h := range []func(context.Context, policy.File, policy.Op) error{
			p.PostOpen, p.PostRead, p.PreSync, p.PostSync, p.PreClose, p.PostClose} {
			if err := h(ctx, f, policy.Op{Flags: syscall.O_RDWR | syscall.O_SYNC}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if f.commits != 0 || f.revalidates != 0 {
			t.Fatalf("%s: %d commits, %d revalidations from hooks that should do nothing", name, f.commits, f.revalidates)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, k := range []policy.Knobs{
		{Commit: policy.CommitPeriodic},
		{Commit: policy.CommitPeriodic, CommitWrites: -1, CommitEvery: time.Second},
		{Cache: policy.CacheTimed},
		{Cache: policy.CacheForever},
		{Cache: policy.CacheMode(9)},
		{Durability: policy.Durability(7)},
	} {
		if err := k.Validate(); !errors.Is(err, policy.ErrBadKnobs) {
			t.Errorf("Validate(%s) = %v, want ErrBadKnobs", k, err)
		}
	}
}

func TestDurabilityFor(t *testing.T) {
	k := lookup(t, "posix").Knobs()
	for _, c := range []struct {
		flags int
		fsync bool
		want  policy.Durability
	}{
		{syscall.O_WRONLY, false, policy.DurableMajority},
		{syscall.O_WRONLY, true, policy.DurableAll},
		{syscall.O_WRONLY | syscall.O_SYNC, false, policy.DurableAll},
		{syscall.O_WRONLY | syscall.O_DSYNC, false, policy.DurableAll},
	} {
		if got := k.DurabilityFor(c.flags, c.fsync); got != c.want {
			t.Errorf("DurabilityFor(%#x, %v) = %s, want %s", c.flags, c.fsync, got, c.want)
		}
	}
}

// TestSerializableFor: session, nfs and relaxed let read-only meta calls be
// serializable; posix and the others do not, and neither does an O_RSYNC
// handle of any policy. Nearby meta reads with a cache that relies on
// callbacks or asks every time are refused.
func TestSerializableFor(t *testing.T) {
	for _, p := range policy.All() {
		want := p.Name() == "session" || p.Name() == "nfs" || p.Name() == "relaxed"
		if got := p.Knobs().SerializableFor(syscall.O_RDONLY); got != want {
			t.Errorf("%s: SerializableFor(O_RDONLY) = %v, want %v", p.Name(), got, want)
		}
		if p.Knobs().SerializableFor(syscall.O_RDONLY | syscall.O_RSYNC) {
			t.Errorf("%s: an O_RSYNC handle reads serializable", p.Name())
		}
	}
	for _, k := range []policy.Knobs{
		{Cache: policy.CacheCoherent, NearbyMeta: true},
		{Cache: policy.CacheTimed, CacheTTL: time.Second, Reads: policy.ReadSynchronized, NearbyMeta: true},
	} {
		if err := k.Validate(); !errors.Is(err, policy.ErrBadKnobs) {
			t.Errorf("Validate(%s) = %v, want ErrBadKnobs", k, err)
		}
	}
}
