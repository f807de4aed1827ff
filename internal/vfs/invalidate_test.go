package vfs

import (
	"slices"
	"testing"

	"tessera/internal/meta"
)

// TestInvalidationsReachSubscribers: an invalidation before any
// subscription is dropped; each subscriber gets what comes after its
// subscription and nothing after its cancel.
func TestInvalidationsReachSubscribers(t *testing.T) {
	var n Invalidations
	n.Invalidate(1)
	var a, b []meta.Ino
	cancelA := n.Subscribe(func(ino meta.Ino) { a = append(a, ino) })
	n.Invalidate(2)
	n.Subscribe(func(ino meta.Ino) { b = append(b, ino) })
	n.Invalidate(3)
	cancelA()
	n.Invalidate(4)
	if !slices.Equal(a, []meta.Ino{2, 3}) || !slices.Equal(b, []meta.Ino{3, 4}) {
		t.Fatalf("subscribers got %v and %v, want [2 3] and [3 4]", a, b)
	}
}
