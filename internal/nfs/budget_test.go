package nfs

import (
	"context"
	"errors"
	"testing"
)

func TestBudgetWaitsPastItsLimit(t *testing.T) {
	b := newBudget(10)
	ctx := context.Background()
	if err := b.take(ctx, 8); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.take(ctx, 5) }()
	select {
	case err := <-got:
		t.Fatalf("took 5 more of 10 with 8 held: %v", err)
	default:
	}
	b.give(8)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// One larger than the limit is taken once nothing else is held.
	b.give(5)
	if err := b.take(ctx, 100); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { got <- b.take(cctx, 1) }()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("take with a canceled context: %v", err)
	}
	b.give(100)
	if b.held != 0 {
		t.Fatalf("%d held after all was given back", b.held)
	}
}
