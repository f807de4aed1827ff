package clock

import (
	"testing"
	"time"
)

func TestFakeTimersFireOnAdvance(t *testing.T) {
	start := time.Unix(1000, 0)
	f := NewFake(start)
	tm := f.NewTimer(100 * time.Millisecond)
	ran := make(chan time.Time, 1)
	f.AfterFunc(300*time.Millisecond, func() { ran <- f.Now() })
	f.Advance(99 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired 1 ms early")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case at := <-tm.C():
		if want := start.Add(100 * time.Millisecond); !at.Equal(want) {
			t.Fatalf("fired with %v, want %v", at, want)
		}
	default:
		t.Fatal("timer did not fire at its deadline")
	}
	if f.Pending() != 1 {
		t.Fatalf("%d timers pending, want the AfterFunc only", f.Pending())
	}
	f.Advance(time.Second)
	if got := <-ran; !got.Equal(start.Add(1100 * time.Millisecond)) {
		t.Fatalf("AfterFunc saw %v", got)
	}
	if got := Since(f, start); got != 1100*time.Millisecond {
		t.Fatalf("Since = %v", got)
	}
}

func TestFakeStopAndReset(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	fired := make(chan struct{}, 4)
	tm := f.AfterFunc(time.Second, func() { fired <- struct{}{} })
	arms := f.Arms()
	f.Advance(900 * time.Millisecond)
	if !tm.Reset(time.Second) { // re-armed: now due at 1.9 s
		t.Fatal("Reset of an armed timer reported it was not armed")
	}
	if f.Arms() != arms+1 {
		t.Fatalf("Arms %d after a Reset, want %d", f.Arms(), arms+1)
	}
	f.Advance(900 * time.Millisecond)
	select {
	case <-fired:
		t.Fatal("re-armed timer fired at its old deadline")
	default:
	}
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop: want true once, then false")
	}
	f.Advance(time.Hour)
	select {
	case <-fired:
		t.Fatal("stopped timer fired")
	default:
	}
}

func TestRealIsDefault(t *testing.T) {
	if _, ok := Or(nil).(Real); !ok {
		t.Fatal("Or(nil) is not Real")
	}
	f := NewFake(time.Unix(0, 0))
	if Or(f) != Clock(f) {
		t.Fatal("Or(f) is not f")
	}
	tm := Real{}.NewTimer(time.Millisecond)
	<-tm.C()
}

func TestFakeAdvanceToNext(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	if _, ok := f.AdvanceToNext(); ok {
		t.Fatal("AdvanceToNext with no timer armed moved")
	}
	a := f.NewTimer(3 * time.Second)
	b := f.NewTimer(time.Second)
	if d, ok := f.AdvanceToNext(); !ok || d != time.Second {
		t.Fatalf("AdvanceToNext = %v, %v; want 1s", d, ok)
	}
	select {
	case <-b.C():
	default:
		t.Fatal("the earliest timer did not fire")
	}
	select {
	case <-a.C():
		t.Fatal("a later timer fired")
	default:
	}
	if d, _ := f.AdvanceToNext(); d != 2*time.Second {
		t.Fatalf("second AdvanceToNext moved %v, want 2s", d)
	}
}
