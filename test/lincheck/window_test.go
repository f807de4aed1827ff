package lincheck

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func w(client, file int, v uint64, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: Input{File: file, Write: true, Value: v}, Output: uint64(0), Call: call, Return: ret}
}

func r(client, file int, v uint64, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: Input{File: file}, Output: v, Call: call, Return: ret}
}

// TestFirstFailureOfAWriteSeenTwice: a write of 0xa that spans the others
// is seen, then overwritten by 0xb, then seen again (it took effect twice).
// The stale-read scan finds nothing (no write returned between 0xa's
// return and a read), porcupine refuses it, and FirstFailure names the
// second read of 0xa as the first observation nothing explains.
func TestFirstFailureOfAWriteSeenTwice(t *testing.T) {
	hist := []porcupine.Operation{
		w(0, 1, 0x7, 0, 5), // another file, linearizable
		r(1, 1, 0x7, 6, 9),
		w(0, 0, 0xa, 0, 100),
		r(1, 0, 0xa, 10, 20),
		w(2, 0, 0xb, 30, 40),
		r(1, 0, 0xb, 50, 60),
		r(2, 0, 0xa, 70, 80),
		r(1, 0, 0xa, 110, 120),
	}
	m := Model(1)
	if porcupine.CheckOperations(m, hist) {
		t.Fatal("porcupine accepts a write seen, overwritten and seen again")
	}
	if s := StaleReads(hist); len(s) != 0 {
		t.Fatalf("StaleReads = %q; the simple scan was expected to miss this one", s)
	}
	f, ok := FirstFailure(m, hist, 100, time.Minute)
	if !ok {
		t.Fatal("FirstFailure found nothing")
	}
	if f.File != 0 || f.At != 80 || !reflect.DeepEqual(f.Last, hist[6]) {
		t.Fatalf("FirstFailure = f%d at %d with %s; want f0 at 80 with %s", f.File, f.At, Describe(f.Last), Describe(hist[6]))
	}
	if len(f.Window) != 5 || f.Window[0].Call != 0 || f.Window[4].Call != 70 {
		t.Fatalf("window: %d operations, want the 5 of f0 called by 80", len(f.Window))
	}
	if _, ok := FirstFailure(m, hist[:6], 100, time.Minute); ok {
		t.Fatal("FirstFailure refuses the linearizable prefix")
	}
}

// TestPrefixPendsWhatHadNotReturned: at time t a write under way is
// pending and a read under way is left out.
func TestPrefixPendsWhatHadNotReturned(t *testing.T) {
	hist := []porcupine.Operation{w(0, 0, 2, 0, 10), r(1, 0, 2, 5, 15), w(2, 0, 3, 20, 30)}
	got := Prefix(hist, 8)
	if len(got) != 1 || got[0].Return != math.MaxInt64 {
		t.Fatalf("Prefix(8) = %v; want the write alone, pending", got)
	}
	if got := Prefix(hist, 16); len(got) != 2 || got[0].Return != 10 || got[1].Return != 15 {
		t.Fatalf("Prefix(16) = %v; want the write and the read as they were", got)
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	hist := []porcupine.Operation{w(0, 1, 0x100000002, 3, math.MaxInt64), r(2, 0, Torn, 4, 9)}
	var b bytes.Buffer
	if err := WriteHistory(&b, hist); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHistory(&b)
	if err != nil || !reflect.DeepEqual(got, hist) {
		t.Fatalf("ReadHistory = %v, %v; want %v", got, err, hist)
	}
}
