package vfs

import (
	"testing"

	"tessera/internal/meta"
)

// TestWithQuota: statfs inside a quota tree shows the quota's limits as
// the totals and what its usage leaves as free, never more free than the
// cluster has; a limit of 0 leaves that figure alone.
func TestWithQuota(t *testing.T) {
	cluster := StatFS{Bsize: 4096, Blocks: 1 << 30, Bfree: 1 << 29, Bavail: 1 << 29, Files: 1 << 30, Ffree: 1 << 30, NameLen: 255}
	for _, c := range []struct {
		name string
		st   StatFS
		q    meta.Quota
		want StatFS
	}{
		{"bytes", cluster, meta.Quota{MaxBytes: 10 << 20, Bytes: 4<<20 + 1},
			StatFS{Bsize: 4096, Blocks: 2560, Bfree: 2560 - 1025, Bavail: 2560 - 1025, Files: 1 << 30, Ffree: 1 << 30, NameLen: 255}},
		{"over its limit", cluster, meta.Quota{MaxBytes: 10 << 20, Bytes: 11 << 20, MaxInodes: 5, Inodes: 7},
			StatFS{Bsize: 4096, Blocks: 2560, Bfree: 0, Bavail: 0, Files: 5, Ffree: 0, NameLen: 255}},
		{"inodes", cluster, meta.Quota{MaxInodes: 100, Inodes: 40},
			StatFS{Bsize: 4096, Blocks: 1 << 30, Bfree: 1 << 29, Bavail: 1 << 29, Files: 100, Ffree: 60, NameLen: 255}},
		// df's used column (blocks - free) is the quota's usage; what a
		// write may use is never more than the cluster has.
		{"cluster fuller than the quota", StatFS{Bsize: 4096, Blocks: 1 << 30, Bfree: 10, Bavail: 10, Files: 1 << 30, Ffree: 3},
			meta.Quota{MaxBytes: 10 << 20, Bytes: 4096, MaxInodes: 100},
			StatFS{Bsize: 4096, Blocks: 2560, Bfree: 2559, Bavail: 10, Files: 100, Ffree: 3}},
	} {
		if got := withQuota(c.st, c.q); got != c.want {
			t.Errorf("%s: %+v; want %+v", c.name, got, c.want)
		}
	}
}
