package cachetier

import (
	"testing"
	"time"

	"tessera/internal/backoff"
)

func TestHealthBackoff(t *testing.T) {
	h := health{policy: backoff.Policy{Base: 2 * time.Second, Max: 30 * time.Second}}
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	admit := func(now time.Time, wantOK, wantProbe bool) {
		t.Helper()
		ok, probe := h.admit(now)
		if ok != wantOK || probe != wantProbe {
			t.Fatalf("admit at +%v = %v, %v; want %v, %v", now.Sub(t0), ok, probe, wantOK, wantProbe)
		}
	}

	admit(at(0), true, false)
	if !h.report(at(0), false, failed) {
		t.Fatal("first failure did not take the server down")
	}
	if h.report(at(0), false, failed) {
		t.Fatal("a second failure of a down server took it down again")
	}
	admit(at(1999*time.Millisecond), false, false)

	// Back-off doubles with every failed probe, up to the maximum.
	now := at(0)
	for _, backoff := range []time.Duration{2, 4, 8, 16, 30, 30} {
		backoff *= time.Second
		admit(now.Add(backoff-time.Millisecond), false, false)
		now = now.Add(backoff)
		admit(now, true, true)
		admit(now, false, false) // one probe at a time
		h.report(now, true, failed)
	}

	// An abandoned probe leaves the server down, probe-able at once.
	admit(now.Add(30*time.Second), true, true)
	h.report(now.Add(30*time.Second), true, abandoned)
	admit(now.Add(30*time.Second), true, true)

	// A probe that gets an answer brings it up, and resets the back-off.
	h.report(now.Add(30*time.Second), true, answered)
	admit(now.Add(30*time.Second), true, false)
	if down, _ := h.state(); down {
		t.Fatal("server still down after a good probe")
	}
	now = now.Add(time.Minute)
	h.report(now, false, failed)
	admit(now.Add(2*time.Second), true, true)
}

func TestExptime(t *testing.T) {
	p := &Pool{opts: Options{Now: func() time.Time { return time.Unix(1_000_000, 0) }}}
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{0, 0},
		{time.Millisecond, 1},
		{90 * time.Second, 90},
		{30 * 24 * time.Hour, 30 * 24 * 3600},
		{31 * 24 * time.Hour, 1_000_000 + 31*24*3600},
	} {
		if got := p.exptime(tc.ttl); got != tc.want {
			t.Errorf("exptime(%v) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}
