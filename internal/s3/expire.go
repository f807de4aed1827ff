package s3

import (
	"context"
	"errors"
	"path"
	"strings"
	"syscall"
	"time"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// Abandoned multipart uploads: an upload neither completed nor aborted
// (a client that died, a killed copy tool) holds its parts' bytes. An
// upload initiated more than Config.UploadExpiry ago (default
// DefaultUploadExpiry, on the backend's clock) is removed with its parts
// by ExpireUploads, which the server runs every expirySweep; the upload
// is then NoSuchUpload, as after an abort.

// DefaultUploadExpiry is the age past which an upload is abandoned.
const DefaultUploadExpiry = 7 * 24 * time.Hour

// maxExpirySweep bounds the time between two sweeps (a quarter of the
// expiry when that is shorter).
const maxExpirySweep = time.Hour

// expirySweep is the time between two sweeps.
func (b *Backend) expirySweep() time.Duration {
	return min(maxExpirySweep, max(b.expiry/4, time.Second))
}

// ExpireUploads removes the uploads initiated more than the expiry ago in
// every bucket of the serving root and of each key's root, and returns
// how many it removed. It goes on past an upload it cannot remove and
// returns the first such error.
func (b *Backend) ExpireUploads(ctx context.Context) (int, error) {
	if b.expiry <= 0 {
		return 0, nil
	}
	roots := []string{b.root}
	if keys, err := ListKeys(ctx, b.api); err == nil {
		for _, k := range keys {
			if k.Root != "/" && (b.root == "/" || k.Root == b.root || strings.HasPrefix(k.Root, b.root+"/")) {
				roots = append(roots, path.Clean(k.Root))
			}
		}
	}
	cutoff := b.clk.Now().Add(-b.expiry).Unix()
	c := caller{cred: vfs.Root}
	seen := make(map[meta.Ino]bool)
	n := 0
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	for _, r := range roots {
		base, err := b.v.Resolve(ctx, vfs.Root, meta.RootIno, r)
		if err != nil || !base.IsDir() || seen[base.Ino] {
			continue // a key's root not made yet
		}
		seen[base.Ino] = true
		after := ""
		for {
			ents, more, err := b.v.ReadDir(ctx, vfs.Root, base.Ino, after, 1024, false)
			if err != nil {
				note(err)
				break
			}
			for _, e := range ents {
				after = e.Name
				if e.Mode&syscall.S_IFMT == syscall.S_IFDIR && validBucket(e.Name) {
					k, err := b.expireBucket(ctx, c, e.Ino, cutoff)
					n += k
					if err != nil {
						note(err)
					}
				}
			}
			if !more {
				break
			}
		}
	}
	if n > 0 {
		b.log.Info("s3: abandoned multipart uploads removed", "uploads", n, "older_than", b.expiry.String())
	}
	return n, first
}

// expireBucket removes bucket bkt's uploads initiated before cutoff (unix
// seconds).
func (b *Backend) expireBucket(ctx context.Context, c caller, bkt meta.Ino, cutoff int64) (int, error) {
	ups, err := b.v.Lookup(ctx, c.cred, bkt, uploadsDir)
	if errors.Is(err, syscall.ENOENT) || err == nil && !ups.IsDir() {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var old []meta.DirEntry
	after := ""
	for {
		ents, more, err := b.v.ReadDir(ctx, c.cred, ups.Ino, after, 1024, false)
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			after = e.Name
			if !validUploadID(e.Name) {
				continue
			}
			// An upload without a readable record is one whose create
			// died between its mkdir and its record: its directory's
			// mtime tells its age.
			r, err := b.uploadRecord(ctx, e.Ino)
			if err != nil {
				in, aerr := b.v.GetAttr(ctx, e.Ino)
				if aerr != nil {
					continue
				}
				r.Initiated = in.Mtime / int64(time.Second)
			}
			if r.Initiated < cutoff {
				old = append(old, e)
			}
		}
		if !more {
			break
		}
	}
	n := 0
	for _, e := range old {
		if err := b.removeUploadDir(ctx, c, e.Ino, bkt, e.Name); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
