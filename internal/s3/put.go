package s3

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"strings"
	"syscall"

	"github.com/versity/versitygw/s3api/middlewares"
	"github.com/versity/versitygw/s3api/utils"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// MaxObjectSize bounds a single PUT and a part (S3's 5 GiB).
const MaxObjectSize = 5 << 30

// ioChunk is how much a PUT reads and writes at a time.
const ioChunk = 1 << 20

// emptyETag is the MD5 of nothing.
const emptyETag = `"d41d8cd98f00b204e9800998ecf8427e"`

// mkdirAll returns directory dir/comps..., making what is missing (mode
// 0755, owned by the caller). A component that is a file is
// ObjectParentIsFile. Directories come from the cache (dircache.go);
// a failure past a kept one is tried again afresh.
func (b *Backend) mkdirAll(ctx context.Context, c caller, dir meta.Ino, comps []string) (meta.Ino, error) {
	ino, cached, err := b.mkdirs(ctx, c, dir, comps, false)
	if err != nil && cached {
		ino, _, err = b.mkdirs(ctx, c, dir, comps, true)
	}
	return ino, err
}

// mkdirs is mkdirAll, through the cache unless fresh; cached reports that
// a directory came from it.
func (b *Backend) mkdirs(ctx context.Context, c caller, dir meta.Ino, comps []string, fresh bool) (_ meta.Ino, cached bool, _ error) {
	for _, name := range comps {
		in, hit, err := b.lookupDir(ctx, c, dir, name, fresh)
		cached = cached || hit
		if errors.Is(err, syscall.ENOENT) {
			in, err = b.v.Create(ctx, c.cred, meta.CreateReq{Parent: dir, Name: name, Mode: syscall.S_IFDIR | 0o755})
			if errors.Is(err, syscall.EEXIST) { // made meanwhile
				in, err = b.v.Lookup(ctx, c.cred, dir, name)
			}
		}
		if err != nil {
			return 0, cached, b.fail("mkdir", err)
		}
		if !in.IsDir() {
			return 0, cached, s3err.GetAPIError(s3err.ErrObjectParentIsFile)
		}
		if !hit {
			b.keepDir(c, dir, name, in)
		}
		c.seen.put(in)
		dir = in.Ino
	}
	return dir, cached, nil
}

// parentFor is the directory a PUT of comps (the key's, its last one the
// object's name) writes in, made if missing, and whether it came from the
// cache.
func (b *Backend) parentFor(ctx context.Context, c caller, bkt meta.Ino, comps []string, fresh bool) (meta.Ino, bool, error) {
	ino, cached, err := b.mkdirs(ctx, c, bkt, comps[:len(comps)-1], fresh)
	if err != nil && cached {
		return b.mkdirs(ctx, c, bkt, comps[:len(comps)-1], true)
	}
	return ino, cached, err
}

// tmpName is a fresh temporary name (vfs.TmpPrefix: never listed).
func tmpName() string {
	var rnd [8]byte
	rand.Read(rnd[:])
	return vfs.TmpPrefix + hex.EncodeToString(rnd[:])
}

// written is a new file not yet named: made with O_TMPFILE and held open
// (fh), so that if this process dies before publish names it, the meta
// service reaps it with the process's session: a killed PUT, part upload
// or complete leaves nothing behind.
type written struct {
	parent meta.Ino
	ino    meta.Ino
	fh     uint64
	size   int64
	md5    []byte
	// after is the inode as fill's commit left it (Ino 0: not known,
	// asked for when needed).
	after meta.Inode
}

// newTemp makes an unnamed file in parent, open for writing, of blocks of
// bs bytes (0: its parent's block size).
func (b *Backend) newTemp(ctx context.Context, c caller, parent meta.Ino, bs uint32) (written, *vfs.File, error) {
	o, err := b.v.TmpfileBlockSize(ctx, c.cred, parent, 0o644, syscall.O_WRONLY, bs)
	if err != nil {
		return written{}, nil, b.fail("create", err)
	}
	return written{parent: parent, ino: o.Inode.Ino, fh: o.Fh}, o.File, nil
}

// drop releases an unnamed file: the meta service reaps it.
func (b *Backend) drop(ctx context.Context, w written) {
	if err := b.v.Release(context.WithoutCancel(ctx), w.fh); err != nil {
		b.log.Warn("s3: releasing an unnamed file failed", "inode", w.ino, "err", err)
	}
}

// writeTemp writes body (size bytes; -1: unknown, to EOF) into a new
// unnamed file in parent (blocks of bs bytes, 0: the parent's), committed (Flush: an acknowledged change that
// survives a crash of this process and of the meta service, as a close
// does; not fsync'd to disk, as versitygw's posix backend does not). The body must give
// exactly size bytes; the checks its readers make (the Content-MD5 and
// x-amz-checksum-* ones) fail the write. On error nothing is left.
func (b *Backend) writeTemp(ctx context.Context, c caller, parent meta.Ino, bs uint32, body io.Reader, size int64) (written, error) {
	if size > MaxObjectSize {
		return written{}, s3err.GetEntityTooLargeErr(size, MaxObjectSize)
	}
	w, f, err := b.newTemp(ctx, c, parent, bs)
	if err != nil {
		return written{}, err
	}
	return b.fill(ctx, w, f, body, size)
}

// fill is writeTemp's copy of body into w, just made (newTemp).
func (b *Backend) fill(ctx context.Context, w written, f *vfs.File, body io.Reader, size int64) (written, error) {
	sum := md5.New()
	if size > 0 {
		f.ExpectSize(size) // the last block's buffer is no larger than its bytes
	}
	n, werr := b.copyIn(ctx, f, body, size, sum)
	if werr == nil {
		werr = f.Flush(ctx)
	}
	if werr != nil {
		b.drop(ctx, w)
		return written{}, b.fail("write", werr)
	}
	w.size, w.md5 = n, sum.Sum(nil)
	if in, ok := f.Committed(); ok && in.Ino == w.ino && in.Size == uint64(n) {
		w.after = in
	}
	return w, nil
}

// copyBuf is the buffer a body of size bytes (-1: unknown) is copied
// through: ioChunk, or less for a smaller body of known size (a 4 KiB PUT
// allocated and cleared 1 MiB, 15% of the endpoint's CPU in a 4 KiB PUT
// profile, and more in garbage collection). At least minCopyBuf, so that a
// byte past the end is still seen.
func copyBuf(size int64) int {
	if size < 0 || size >= ioChunk {
		return ioChunk
	}
	return int(max(size, minCopyBuf))
}

// minCopyBuf is copyBuf's least buffer.
const minCopyBuf = 4 << 10

// copyIn writes body to f from offset 0, hashing it into sum, and checks
// that it gave size bytes (any number up to MaxObjectSize when size < 0).
func (b *Backend) copyIn(ctx context.Context, f *vfs.File, body io.Reader, size int64, sum hash.Hash) (int64, error) {
	var buf []byte
	if n := copyBuf(size); n == ioChunk {
		bp := chunkPool.Get().(*[]byte)
		defer chunkPool.Put(bp)
		buf = *bp
	} else {
		buf = make([]byte, n)
	}
	var off int64
	limit := size
	if limit < 0 {
		limit = MaxObjectSize
	}
	for {
		n, rerr := io.ReadFull(body, buf)
		if n > 0 {
			if off+int64(n) > limit {
				if size < 0 {
					return off, s3err.GetEntityTooLargeErr(off+int64(n), MaxObjectSize)
				}
				return off, s3err.GetAPIError(s3err.ErrContentLengthMismatch)
			}
			sum.Write(buf[:n])
			if _, err := f.Write(ctx, off, buf[:n]); err != nil {
				return off, err
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return off, rerr
		}
	}
	if size >= 0 && off != size {
		return off, s3err.GetAPIError(s3err.ErrIncompleteBody)
	}
	return off, nil
}

// publish sets w's record, names it and releases it: a new key is linked
// under its name at once; over an existing one (the link found the name
// taken), w is linked under a temporary name and renamed over it. Readers
// see the old object or the whole new one. Only a crash between that
// link and the rename leaves a temporary name (never listed). w is
// released once named (before, the release would reap it).
func (b *Backend) publish(ctx context.Context, c caller, w written, name string, r record) (meta.Inode, error) {
	in, err := b.writeRecord(ctx, c, w.ino, w.after, r)
	free := false
	if err == nil {
		// One meta call (and update) fewer than a lookup, then link and
		// rename. EEXIST: the name is taken (or was made meanwhile):
		// replaced as any existing object is.
		var linked meta.Inode
		linked, err = b.v.Link(ctx, c.cred, w.ino, w.parent, name)
		free = err == nil
		if free && linked.Ino == w.ino {
			// The link's reply is the object as named, the record just
			// written included (nobody else had the unnamed file): its
			// change counter keys the record for the next GET or HEAD.
			r.Size, r.Mtime = in.Size, in.Mtime
			b.records.put(&linked, cachedRecord{r: r, ok: true, size: recordBytes(&r)})
		}
		if errors.Is(err, syscall.EEXIST) {
			err = nil
		}
	}
	tmp := tmpName()
	linked := false
	if err == nil && !free {
		_, err = b.v.Link(ctx, c.cred, w.ino, w.parent, tmp)
		linked = err == nil
	}
	if err == nil && !free {
		err = b.v.Rename(ctx, c.cred, w.parent, tmp, w.parent, name, 0)
		if errors.Is(err, syscall.EISDIR) {
			err = s3err.GetAPIError(s3err.ErrExistingObjectIsDirectory)
		}
	}
	if err != nil {
		if linked {
			if uerr := b.v.Unlink(context.WithoutCancel(ctx), c.cred, w.parent, tmp); uerr != nil && !errors.Is(uerr, syscall.ENOENT) {
				b.log.Warn("s3: removing a temporary name failed", "inode", w.ino, "err", uerr)
			}
		}
		b.drop(ctx, w)
		return meta.Inode{}, b.fail("publish", err)
	}
	if err := b.v.Release(context.WithoutCancel(ctx), w.fh); err != nil {
		// Named already: the meta service drops the open with the
		// session.
		b.log.Warn("s3: releasing a named file failed", "inode", w.ino, "err", err)
	}
	return in, nil
}

// checksumReader wraps body with the check of the x-amz-checksum-* value
// sent in a header (a trailing checksum is checked by versitygw's chunk
// reader).
func checksumReader(po *s3response.PutObjectInput) (io.Reader, error) {
	if _, trailing := po.Body.(middlewares.ChecksumReader); trailing {
		return po.Body, nil
	}
	for _, c := range []struct {
		v  *string
		ht utils.HashType
	}{
		{po.ChecksumCRC32, utils.HashTypeCRC32}, {po.ChecksumCRC32C, utils.HashTypeCRC32C},
		{po.ChecksumSHA1, utils.HashTypeSha1}, {po.ChecksumSHA256, utils.HashTypeSha256},
		{po.ChecksumCRC64NVME, utils.HashTypeCRC64NVME}, {po.ChecksumSHA512, utils.HashTypeSha512},
		{po.ChecksumMD5, utils.HashTypeMd5}, {po.ChecksumXXHASH64, utils.HashTypeXXHASH64},
		{po.ChecksumXXHASH3, utils.HashTypeXXHASH3}, {po.ChecksumXXHASH128, utils.HashTypeXXHASH128},
	} {
		if c.v != nil {
			return utils.NewHashReader(po.Body, *c.v, c.ht)
		}
	}
	return po.Body, nil
}

// PutObject writes an object: under a temporary name, committed and made
// durable, its record set, then renamed over the key.
func (b *Backend) PutObject(ctx context.Context, po s3response.PutObjectInput) (s3response.PutObjectOutput, error) {
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return s3response.PutObjectOutput{}, err
	}
	bkt, err := b.bucket(ctx, c, deref(po.Bucket))
	if err != nil {
		return s3response.PutObjectOutput{}, err
	}
	comps, isDir, err := splitKey(deref(po.Key))
	if err != nil {
		return s3response.PutObjectOutput{}, err
	}
	if metaSize(po.Metadata) > maxMetadata {
		return s3response.PutObjectOutput{}, s3err.GetMetadataTooLargeErr(metaSize(po.Metadata), maxMetadata)
	}
	size := int64(-1)
	if po.ContentLength != nil {
		size = *po.ContentLength
	}
	if isDir {
		if size > 0 {
			return s3response.PutObjectOutput{}, s3err.GetAPIError(s3err.ErrDirectoryObjectContainsData)
		}
		if _, err := b.mkdirAll(ctx, c, bkt.Ino, comps); err != nil {
			return s3response.PutObjectOutput{}, err
		}
		zero := int64(0)
		return s3response.PutObjectOutput{ETag: emptyETag, Size: &zero}, nil
	}
	if size > MaxObjectSize {
		return s3response.PutObjectOutput{}, s3err.GetEntityTooLargeErr(size, MaxObjectSize)
	}
	parent, cached, err := b.parentFor(ctx, c, bkt.Ino, comps, false)
	if err != nil {
		return s3response.PutObjectOutput{}, err
	}
	name := comps[len(comps)-1]
	if err := b.putPreconditions(ctx, c, parent, name, po.IfMatch, po.IfNoneMatch); err != nil {
		return s3response.PutObjectOutput{}, err
	}
	body, err := checksumReader(&po)
	if err != nil {
		return s3response.PutObjectOutput{}, s3err.GetAPIError(s3err.ErrInvalidChecksumHeader)
	}
	o, err := b.v.TmpfileBlockSize(ctx, c.cred, parent, 0o644, syscall.O_WRONLY, 0)
	if err != nil && cached && stale(err) {
		// The kept parent went (dircache.go): made afresh. Nothing of
		// the body was read yet.
		if parent, _, err = b.parentFor(ctx, c, bkt.Ino, comps, true); err != nil {
			return s3response.PutObjectOutput{}, err
		}
		o, err = b.v.TmpfileBlockSize(ctx, c.cred, parent, 0o644, syscall.O_WRONLY, 0)
	}
	if err != nil {
		return s3response.PutObjectOutput{}, b.fail("create", err)
	}
	w, err := b.fill(ctx, written{parent: parent, ino: o.Inode.Ino, fh: o.Fh}, o.File, body, size)
	if err != nil {
		return s3response.PutObjectOutput{}, err
	}
	etag := quote(hex.EncodeToString(w.md5))
	if _, err := b.publish(ctx, c, w, name, record{ETag: etag, ContentType: deref(po.ContentType), Meta: po.Metadata}); err != nil {
		return s3response.PutObjectOutput{}, err
	}
	return s3response.PutObjectOutput{ETag: etag, Size: &w.size}, nil
}

// putPreconditions checks a conditional PUT's If-Match and If-None-Match
// against the object there now.
func (b *Backend) putPreconditions(ctx context.Context, c caller, parent meta.Ino, name string, ifMatch, ifNoneMatch *string) error {
	if ifMatch == nil && ifNoneMatch == nil {
		return nil
	}
	old, err := b.v.Lookup(ctx, c.cred, parent, name)
	exists := err == nil && old.IsRegular()
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return b.fail("lookup", err)
	}
	if ifNoneMatch != nil {
		if exists && (*ifNoneMatch == "*" || strings.Trim(*ifNoneMatch, `"`) == strings.Trim(b.readRecord(ctx, &old).ETag, `"`)) {
			return s3err.GetAPIError(s3err.ErrPreconditionFailed)
		}
	}
	if ifMatch != nil {
		if !exists {
			return s3err.GetAPIError(s3err.ErrNoSuchKey)
		}
		if strings.Trim(*ifMatch, `"`) != strings.Trim(b.readRecord(ctx, &old).ETag, `"`) {
			return s3err.GetAPIError(s3err.ErrPreconditionFailed)
		}
	}
	return nil
}
