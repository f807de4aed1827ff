package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// grantOrder queues a waiter on s for each entry of urgent in turn (each queued after the one
// before), runs before, then releases the held slot once per waiter and
// returns the order they got it in.
func grantOrder(t *testing.T, s *fetchSlots, urgent []*atomic.Bool, before func()) []int {
	t.Helper()
	got := make(chan int, len(urgent))
	for i, u := range urgent {
		go func() {
			if err := s.acquire(context.Background(), u); err != nil {
				t.Error(err)
				return
			}
			got <- i
		}()
		waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.wait) == i+1 })
	}
	before()
	var order []int
	for range urgent {
		s.release() // the previous holder's slot
		select {
		case i := <-got:
			order = append(order, i)
		case <-time.After(time.Minute): // for a hang only
			t.Fatal("no waiter got the released slot")
		}
	}
	return order
}

// waitFor polls cond until it holds; the bound is for a hang only (a
// busy machine may take seconds for what waitFor's callers wait on).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func TestFetchSlotsUrgentFirstThenFIFO(t *testing.T) {
	s := newFetchSlots(1)
	if err := s.acquire(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	u := []*atomic.Bool{nil, new(atomic.Bool), new(atomic.Bool), nil}
	u[2].Store(true)
	// Waiter 1 turns urgent while it waits (a reader joined its read-ahead).
	order := grantOrder(t, s, u, func() { u[1].Store(true) })
	want := []int{1, 2, 0, 3}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("grant order %v, want %v", order, want)
		}
	}
}

func TestFetchSlotsCancelledWaiterLeavesQueue(t *testing.T) {
	s := newFetchSlots(1)
	if err := s.acquire(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.acquire(ctx, nil) }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.wait) == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("acquire with a cancelled context succeeded while the slot was held")
	}
	s.release()
	// The slot is free again: a new acquire does not wait.
	done := make(chan error, 1)
	go func() { done <- s.acquire(context.Background(), nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // for a hang only
		t.Fatal("slot lost after a cancelled waiter")
	}
}
