package meta

import (
	"errors"
	"reflect"
	"testing"
)

func TestAddAndMissingRanges(t *testing.T) {
	var rs []BlockRange
	for _, r := range []BlockRange{{10, 12}, {0, 2}, {5, 6}, {2, 3}, {6, 10}} {
		rs = AddRange(rs, r)
	}
	if want := []BlockRange{{0, 3}, {5, 12}}; !reflect.DeepEqual(rs, want) {
		t.Fatalf("merged: %v, want %v", rs, want)
	}
	if got, want := MissingRanges(rs, 1, 20), []BlockRange{{3, 5}, {12, 20}}; !reflect.DeepEqual(got, want) {
		t.Errorf("missing of [1,20): %v, want %v", got, want)
	}
	if got := MissingRanges(rs, 6, 9); len(got) != 0 {
		t.Errorf("missing of a held run: %v", got)
	}
	g := &GatewayInfo{State: CachePartial, Cached: rs}
	if !g.Holds(5, 12) || g.Holds(2, 4) || !g.Holds(4, 4) {
		t.Errorf("Holds disagrees with the runs %v", rs)
	}
}

func TestInodeCachedRunsRoundTrip(t *testing.T) {
	rec := sampleInode()
	rec.Replicas = 2
	rec.Gateway = &GatewayInfo{Fileset: 5, HomePath: "f", HomeSize: 1 << 30, State: CachePartial,
		Cached: []BlockRange{{0, 1}, {128, 132}}}
	b := encodeInode(rec)
	got, err := decodeInode(rec.Ino, b)
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("round trip: %+v, %v", got.Gateway, err)
	}
	if _, err := decodeInode(rec.Ino, b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a cut run decodes: %v", err)
	}
	for _, bad := range [][]BlockRange{{{4, 4}}, {{5, 9}, {9, 12}}, {{5, 9}, {1, 2}}} {
		rec.Gateway.Cached = bad
		if _, err := decodeInode(rec.Ino, encodeInode(rec)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("runs %v decode: %v, want ErrCorrupt", bad, err)
		}
	}
	rec.Gateway.Cached, rec.Gateway.State = []BlockRange{{0, 1}}, CacheCached
	if _, err := decodeInode(rec.Ino, encodeInode(rec)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("runs of a cached file decode: %v", err)
	}
}
