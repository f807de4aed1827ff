package meta

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

func sampleFileset() *Fileset {
	return &Fileset{Root: 5, Home: "file:///srv/home", Mode: ModeIW, ValidityLag: time.Minute,
		SyncLag: 2 * time.Second, Prefetch: PrefetchWhole, Conflicts: ConflictsHomeWins, State: FilesetActive, Created: 77}
}

func TestFilesetRoundTrip(t *testing.T) {
	f := sampleFileset()
	b := encodeFileset(f)
	got, err := decodeFileset(f.Root, b)
	if err != nil || got != *f {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(b, 0), append([]byte{9}, b[1:]...)} {
		if _, err := decodeFileset(5, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, want ErrCorrupt", bad, err)
		}
	}
	g := *f
	g.Mode = "rw"
	if _, err := decodeFileset(5, encodeFileset(&g)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a record of mode rw decodes: %v", err)
	}
}

func FuzzDecodeFileset(f *testing.F) {
	f.Add(encodeFileset(sampleFileset()))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := decodeFileset(3, b)
		wantCorrupt(t, err)
		if err == nil && !bytes.Equal(encodeFileset(&fs), b) {
			t.Fatalf("re-encoding %x differs", b)
		}
	})
}

func TestInodeGatewayRoundTrip(t *testing.T) {
	rec := sampleInode()
	rec.Replicas = 2
	rec.Gateway = &GatewayInfo{Fileset: 5, HomePath: "d/f1", HomeMtime: 10, HomeCtime: 11, HomeSize: 12,
		Token: "etag-1", State: CachePartial, Validated: 13}
	b := encodeInode(rec)
	got, err := decodeInode(rec.Ino, b)
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("round trip: %+v (%+v), %v", got, got.Gateway, err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(b, 0)} {
		if _, err := decodeInode(rec.Ino, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, want ErrCorrupt", bad, err)
		}
	}
	rec.Gateway.State = 9
	if _, err := decodeInode(rec.Ino, encodeInode(rec)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("cache state 9 decodes: %v", err)
	}
}
