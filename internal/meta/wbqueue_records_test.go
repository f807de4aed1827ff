package meta

import (
	"errors"
	"reflect"
	"testing"
)

// The queue's records round-trip, and every truncation or extension of
// one is ErrCorrupt, never a panic.
func TestWBRecords(t *testing.T) {
	op := &WBOp{Root: 7, Seq: 9, Kind: OpRename, New: true, Permanent: true, Ino: 42, At: 123, Ver: 3,
		Path: "a/b", Path2: "c", Mode: 0o644, Mtime: 99, Target: "", Owner: "gw1", Until: 5, Attempts: 2, Err: "boom"}
	b := encodeWBOp(op)
	got, err := decodeWBOp(7, 9, b)
	if err != nil || !reflect.DeepEqual(got, op) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for i := range len(b) {
		if _, err := decodeWBOp(7, 9, b[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", i, err)
		}
	}
	if _, err := decodeWBOp(7, 9, append(b, 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	bad := append([]byte(nil), b...)
	bad[1] = 99
	if _, err := decodeWBOp(7, 9, bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown kind: %v", err)
	}
	if p, n, err := decodeWBName(encodeWBName(5, "x")); err != nil || p != 5 || n != "x" {
		t.Fatalf("name round trip: %d %q %v", p, n, err)
	}
	if r, s, err := decodeWBLatest(encodeWBLatest(5, 6)); err != nil || r != 5 || s != 6 {
		t.Fatalf("latest round trip: %d %d %v", r, s, err)
	}
}
