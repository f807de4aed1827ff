package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minio/minio-go/v7"
)

// TestS3List10k lists 10,000 keys, written as files on the FUSE mount
// (100 directories of 100), over S3: whole in pages of 1,000 in key
// order, and with the delimiter "/" as 100 common prefixes in pages of 7.
func TestS3List10k(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 files")
	}
	addr := freePort(t)
	c := startCluster(t, withArgs("--s3", addr))
	mc := s3Client(t, addr, s3KeyAdd(t, c, "lister", "--role", "rw"))
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "many", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	var want, wantDirs []string
	for d := range 100 {
		dir := fmt.Sprintf("d%03d", d)
		wantDirs = append(wantDirs, "big/"+dir+"/")
		if err := os.MkdirAll(filepath.Join(c.Mount(), "many", "big", dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 100 {
			name := fmt.Sprintf("f%03d", f)
			want = append(want, "big/"+dir+"/"+name)
			if err := os.WriteFile(filepath.Join(c.Mount(), "many", "big", dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []string
	for o := range mc.ListObjects(ctx, "many", minio.ListObjectsOptions{Prefix: "big/", Recursive: true, MaxKeys: 1000}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		got = append(got, o.Key)
	}
	if !slices.Equal(got, want) {
		t.Errorf("recursive listing: %d keys, want %d in key order", len(got), len(want))
	}
	got = nil
	for o := range mc.ListObjects(ctx, "many", minio.ListObjectsOptions{Prefix: "big/", MaxKeys: 7}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		got = append(got, o.Key)
	}
	if !slices.Equal(got, wantDirs) {
		t.Errorf("listing with the delimiter in pages of 7: %d entries, want the %d directories", len(got), len(wantDirs))
	}
}
