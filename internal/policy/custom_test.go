package policy_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"tessera/internal/policy"
)

// appendOnly is a policy of one's own, the size of the "one small file" the
// package promises: posix's knobs, and writes only at the end of the file.
type appendOnly struct{ policy.Base }

func newAppendOnly() appendOnly {
	posix, _ := policy.Lookup("posix")
	return appendOnly{policy.NewBase("append-only", posix.Knobs())}
}

// PreWrite refuses a write anywhere but at the end.
func (p appendOnly) PreWrite(ctx context.Context, f policy.File, op policy.Op) error {
	if op.Off != f.Size() {
		return fmt.Errorf("write at %d of inode %d of size %d: %w", op.Off, f.Ino(), f.Size(), syscall.EPERM)
	}
	return p.Base.PreWrite(ctx, f, op)
}

func TestCustomPolicy(t *testing.T) {
	var p policy.Policy = newAppendOnly()
	ctx := context.Background()
	f := &fakeFile{ino: 7}
	for range 2 {
		if err := write(t, p, f, syscall.O_WRONLY, 8); err != nil {
			t.Fatal(err)
		}
	}
	// The inherited PostWrite commits each write, as posix does.
	if f.commits != 2 {
		t.Fatalf("%d commits after 2 writes, want 2 (inherited from posix's knobs)", f.commits)
	}
	if err := p.PreWrite(ctx, f, policy.Op{Off: 0, Len: 8}); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("overwrite at 0: %v, want EPERM from the overridden hook", err)
	}
	if p.Name() != "append-only" || policy.Describe(p) != policy.Describe(lookup(t, "posix")) {
		t.Fatalf("name %q knobs %s", p.Name(), policy.Describe(p))
	}
}
