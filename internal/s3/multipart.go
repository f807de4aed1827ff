package s3

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"

	"tessera/internal/meta"
)

// Multipart uploads: an upload is a directory BUCKET/.tessera-s3-uploads/
// ID holding its record (UploadXattr) and its parts, files named by part
// number, each written as a PUT is. Complete makes the object from the
// parts' blocks (assemble.go) under a temporary name next to the key,
// renames it over the key, and removes the upload.

// UploadXattr holds an upload's record on its directory.
const UploadXattr = "user.tessera.s3upload"

// MaxParts bounds a part number (S3's 10,000).
const MaxParts = 10000

// MinPartSize is the smallest part but the last one (S3's 5 MiB).
const MinPartSize = 5 << 20

type uploadRecord struct {
	Key         string            `json:"key"`
	ContentType string            `json:"ct,omitempty"`
	Meta        map[string]string `json:"meta,omitempty"`
	Initiated   int64             `json:"initiated"`
	// BlockSize is the block size part 1 was written in, which the
	// other parts are written in too (partblocks.go); 0 until then.
	BlockSize uint32 `json:"bs,omitempty"`
}

// validUploadID reports whether id may name an upload (32 hex digits).
func validUploadID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

func partName(n int32) string { return fmt.Sprintf("%05d", n) }

// upload returns the directory of upload id of key in bucket, and the
// bucket's (NoSuchUpload when there is none, or it is another key's).
func (b *Backend) upload(ctx context.Context, c caller, bucket, key, id string) (meta.Inode, uploadRecord, error) {
	bkt, err := b.bucket(ctx, c, bucket)
	if err != nil {
		return meta.Inode{}, uploadRecord{}, err
	}
	if !validUploadID(id) {
		return meta.Inode{}, uploadRecord{}, s3err.GetNoSuchUploadErr(id)
	}
	dir, err := b.walk(ctx, c, bkt, []string{uploadsDir, id})
	if err != nil || !dir.IsDir() {
		return meta.Inode{}, uploadRecord{}, s3err.GetNoSuchUploadErr(id)
	}
	r, err := b.uploadRecord(ctx, dir.Ino)
	if err != nil || r.Key != key {
		return meta.Inode{}, uploadRecord{}, s3err.GetNoSuchUploadErr(id)
	}
	return dir, r, nil
}

func (b *Backend) uploadRecord(ctx context.Context, dir meta.Ino) (uploadRecord, error) {
	val, err := b.v.GetXattr(ctx, asRecords, dir, UploadXattr)
	if err != nil {
		return uploadRecord{}, err
	}
	var r uploadRecord
	if len(val) > maxRecord {
		return r, fmt.Errorf("an upload record of %d bytes", len(val))
	}
	return r, json.Unmarshal(val, &r)
}

// CreateMultipartUpload makes the upload's directory and record.
func (b *Backend) CreateMultipartUpload(ctx context.Context, in s3response.CreateMultipartUploadInput) (s3response.InitiateMultipartUploadResult, error) {
	var out s3response.InitiateMultipartUploadResult
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return out, err
	}
	bkt, err := b.bucket(ctx, c, deref(in.Bucket))
	if err != nil {
		return out, err
	}
	key := deref(in.Key)
	if _, isDir, err := splitKey(key); err != nil {
		return out, err
	} else if isDir {
		return out, s3err.GetAPIError(s3err.ErrDirectoryObjectContainsData)
	}
	if metaSize(in.Metadata) > maxMetadata {
		return out, s3err.GetMetadataTooLargeErr(metaSize(in.Metadata), maxMetadata)
	}
	ups, err := b.mkdirAll(ctx, c, bkt.Ino, []string{uploadsDir})
	if err != nil {
		return out, err
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	dir, err := b.v.Create(ctx, c.cred, meta.CreateReq{Parent: ups, Name: id, Mode: syscall.S_IFDIR | 0o700, Excl: true})
	if err != nil {
		return out, b.fail("create upload", err)
	}
	val, _ := json.Marshal(uploadRecord{Key: key, ContentType: deref(in.ContentType), Meta: in.Metadata, Initiated: b.clk.Now().Unix()})
	if err := b.v.SetXattr(ctx, c.cred, dir.Ino, UploadXattr, val, 0); err != nil {
		b.rmdir(context.WithoutCancel(ctx), c.cred, ups, id)
		return out, b.fail("create upload", err)
	}
	return s3response.InitiateMultipartUploadResult{Bucket: deref(in.Bucket), Key: key, UploadId: id}, nil
}

// UploadPart writes a part as a PUT writes an object (a part sent again
// replaces the one before).
func (b *Backend) UploadPart(ctx context.Context, in *awss3.UploadPartInput) (*awss3.UploadPartOutput, error) {
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return nil, err
	}
	n := deref32(in.PartNumber)
	if n < 1 || n > MaxParts {
		return nil, s3err.GetInvalidArgumentErr(s3err.InvalidArgPartNumber, strconv.Itoa(int(n)))
	}
	dir, up, err := b.upload(ctx, c, deref(in.Bucket), deref(in.Key), deref(in.UploadId))
	if err != nil {
		return nil, err
	}
	size := int64(-1)
	if in.ContentLength != nil {
		size = *in.ContentLength
	}
	bs, err := b.partBlockSize(ctx, c, dir, up, n, size)
	if err != nil {
		return nil, err
	}
	body, err := checksumReader(&s3response.PutObjectInput{Body: in.Body,
		ChecksumCRC32: in.ChecksumCRC32, ChecksumCRC32C: in.ChecksumCRC32C, ChecksumSHA1: in.ChecksumSHA1,
		ChecksumSHA256: in.ChecksumSHA256, ChecksumCRC64NVME: in.ChecksumCRC64NVME})
	if err != nil {
		return nil, s3err.GetAPIError(s3err.ErrInvalidChecksumHeader)
	}
	w, err := b.writeTemp(ctx, c, dir.Ino, bs, body, size)
	if err != nil {
		return nil, err
	}
	etag := quote(hex.EncodeToString(w.md5))
	if _, err := b.publish(ctx, c, w, partName(n), record{ETag: etag}); err != nil {
		return nil, err
	}
	return &awss3.UploadPartOutput{ETag: &etag}, nil
}

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// part is an uploaded part.
type part struct {
	n  int32
	in meta.Inode
	r  record
}

// parts lists an upload's parts by number (their records read
// concurrently).
func (b *Backend) parts(ctx context.Context, c caller, dir meta.Ino) ([]part, error) {
	var out []part
	after := ""
	for {
		ents, more, err := b.v.ReadDir(ctx, c.cred, dir, after, 1024, true)
		if err != nil {
			return nil, b.fail("list parts", err)
		}
		for _, e := range ents {
			after = e.Name
			n, err := strconv.Atoi(e.Name)
			if err != nil || len(e.Name) != 5 || n < 1 || n > MaxParts || e.Inode == nil || !e.Inode.IsRegular() {
				continue
			}
			out = append(out, part{n: int32(n), in: *e.Inode})
		}
		if !more {
			break
		}
	}
	each(len(out), recipeReads, func(i int) error {
		out[i].r = b.readRecord(ctx, &out[i].in)
		return nil
	})
	return out, nil
}

// ListParts lists an upload's parts after PartNumberMarker.
func (b *Backend) ListParts(ctx context.Context, in *awss3.ListPartsInput) (s3response.ListPartsResult, error) {
	var out s3response.ListPartsResult
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return out, err
	}
	dir, _, err := b.upload(ctx, c, deref(in.Bucket), deref(in.Key), deref(in.UploadId))
	if err != nil {
		return out, err
	}
	ps, err := b.parts(ctx, c, dir.Ino)
	if err != nil {
		return out, err
	}
	marker, _ := strconv.Atoi(deref(in.PartNumberMarker))
	max := int(deref32(in.MaxParts))
	if max <= 0 || max > 1000 {
		max = 1000
	}
	out = s3response.ListPartsResult{Bucket: deref(in.Bucket), Key: deref(in.Key), UploadID: deref(in.UploadId), PartNumberMarker: marker, MaxParts: max}
	for _, p := range ps {
		if int(p.n) <= marker {
			continue
		}
		if len(out.Parts) == max {
			out.IsTruncated = true
			break
		}
		out.Parts = append(out.Parts, s3response.Part{PartNumber: int(p.n), ETag: p.r.ETag, Size: int64(p.in.Size), LastModified: mtime(&p.in)})
		out.NextPartNumberMarker = int(p.n)
	}
	return out, nil
}

// ListMultipartUploads lists a bucket's uploads in progress, by key (at
// most 1000, keys starting with Prefix).
func (b *Backend) ListMultipartUploads(ctx context.Context, in *awss3.ListMultipartUploadsInput) (s3response.ListMultipartUploadsResult, error) {
	out := s3response.ListMultipartUploadsResult{Bucket: deref(in.Bucket), Prefix: deref(in.Prefix), MaxUploads: 1000}
	c, ctx, err := b.who(ctx, false)
	if err != nil {
		return out, err
	}
	bkt, err := b.bucket(ctx, c, deref(in.Bucket))
	if err != nil {
		return out, err
	}
	ups, err := b.walk(ctx, c, bkt, []string{uploadsDir})
	if errors.Is(err, syscall.ENOENT) {
		return out, nil
	}
	if err != nil {
		return out, b.fail("list uploads", err)
	}
	after := ""
	for {
		ents, more, err := b.v.ReadDir(ctx, c.cred, ups.Ino, after, 1024, false)
		if err != nil {
			return out, b.fail("list uploads", err)
		}
		for _, e := range ents {
			after = e.Name
			if !validUploadID(e.Name) {
				continue
			}
			r, err := b.uploadRecord(ctx, e.Ino)
			if err != nil || !strings.HasPrefix(r.Key, out.Prefix) {
				continue
			}
			out.Uploads = append(out.Uploads, s3response.Upload{Key: r.Key, UploadID: e.Name, Initiated: time.Unix(r.Initiated, 0)})
		}
		if !more || len(out.Uploads) >= 1000 {
			break
		}
	}
	slices.SortFunc(out.Uploads, func(a, b s3response.Upload) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.UploadID, b.UploadID)
	})
	if len(out.Uploads) > 1000 {
		out.Uploads, out.IsTruncated = out.Uploads[:1000], true
	}
	return out, nil
}

// AbortMultipartUpload removes the upload and its parts.
func (b *Backend) AbortMultipartUpload(ctx context.Context, in *awss3.AbortMultipartUploadInput) error {
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return err
	}
	dir, _, err := b.upload(ctx, c, deref(in.Bucket), deref(in.Key), deref(in.UploadId))
	if err != nil {
		return err
	}
	return b.removeUpload(ctx, c, dir.Ino, deref(in.Bucket), deref(in.UploadId))
}

// removeUpload unlinks an upload's files and its directory.
func (b *Backend) removeUpload(ctx context.Context, c caller, dir meta.Ino, bucket, id string) error {
	bkt, err := b.bucket(ctx, c, bucket)
	if err != nil {
		return err
	}
	return b.removeUploadDir(ctx, c, dir, bkt.Ino, id)
}

// removeUploadDir unlinks the files of upload id (directory dir) of
// bucket bkt, its directory, and the uploads directory if it was the last.
func (b *Backend) removeUploadDir(ctx context.Context, c caller, dir, bkt meta.Ino, id string) error {
	ctx = context.WithoutCancel(ctx)
	for {
		ents, _, err := b.v.ReadDir(ctx, c.cred, dir, "", 1024, false)
		if err != nil {
			return b.fail("remove upload", err)
		}
		if len(ents) == 0 {
			break
		}
		if err := each(len(ents), recipeReads, func(i int) error {
			if err := b.v.Unlink(ctx, c.cred, dir, ents[i].Name); err != nil && !errors.Is(err, syscall.ENOENT) {
				return err
			}
			return nil
		}); err != nil {
			return b.fail("remove upload", err)
		}
	}
	ups, err := b.v.Lookup(ctx, c.cred, bkt, uploadsDir)
	if err != nil {
		return b.fail("remove upload", err)
	}
	if err := b.rmdir(ctx, c.cred, ups.Ino, id); err != nil && !errors.Is(err, syscall.ENOENT) {
		return b.fail("remove upload", err)
	}
	b.rmdir(ctx, c.cred, bkt, uploadsDir) // the last upload takes the directory with it
	return nil
}

// CompleteMultipartUpload checks the parts asked for (ascending numbers,
// present, ETags matching, all but the last at least MinPartSize), makes
// the object from their blocks under a temporary name, renames it over
// the key and removes the upload.
func (b *Backend) CompleteMultipartUpload(ctx context.Context, in *awss3.CompleteMultipartUploadInput) (s3response.CompleteMultipartUploadResult, string, error) {
	var out s3response.CompleteMultipartUploadResult
	c, ctx, err := b.who(ctx, true)
	if err != nil {
		return out, "", err
	}
	bucket, key, id := deref(in.Bucket), deref(in.Key), deref(in.UploadId)
	dir, up, err := b.upload(ctx, c, bucket, key, id)
	if err != nil {
		return out, "", err
	}
	if in.MultipartUpload == nil || len(in.MultipartUpload.Parts) == 0 || len(in.MultipartUpload.Parts) > MaxParts {
		return out, "", s3err.GetAPIError(s3err.ErrMalformedXML)
	}
	have, err := b.parts(ctx, c, dir.Ino)
	if err != nil {
		return out, "", err
	}
	byNum := make(map[int32]part, len(have))
	for _, p := range have {
		byNum[p.n] = p
	}
	asked := in.MultipartUpload.Parts
	prev := int32(0)
	for _, ap := range asked {
		n := deref32(ap.PartNumber)
		if n <= prev {
			return out, "", s3err.GetAPIError(s3err.ErrInvalidPartOrder)
		}
		prev = n
	}
	srcs := make([]meta.Inode, 0, len(asked))
	sums := md5.New()
	for _, ap := range asked {
		n := deref32(ap.PartNumber)
		p, ok := byNum[n]
		if !ok || strings.Trim(deref(ap.ETag), `"`) != strings.Trim(p.r.ETag, `"`) {
			return out, "", s3err.GetInvalidPartErr(id, n, deref(ap.ETag))
		}
		raw, err := hex.DecodeString(strings.Trim(p.r.ETag, `"`))
		if err != nil || len(raw) != md5.Size {
			return out, "", s3err.GetInvalidPartErr(id, n, deref(ap.ETag))
		}
		sums.Write(raw)
		srcs = append(srcs, p.in)
	}
	for _, s := range srcs[:len(srcs)-1] {
		if s.Size < MinPartSize {
			return out, "", s3err.GetEntityTooSmallErr(int64(s.Size), MinPartSize)
		}
	}
	etag := quote(fmt.Sprintf("%s-%d", hex.EncodeToString(sums.Sum(nil)), len(asked)))
	bkt, err := b.bucket(ctx, c, bucket)
	if err != nil {
		return out, "", err
	}
	comps, _, err := splitKey(key)
	if err != nil {
		return out, "", err
	}
	parent, err := b.mkdirAll(ctx, c, bkt.Ino, comps[:len(comps)-1])
	if err != nil {
		return out, "", err
	}
	// The object's blocks are the first part's size: the parts written
	// in it (partblocks.go) are then the object's blocks end to end.
	w, _, err := b.newTemp(ctx, c, parent, srcs[0].BlockSize)
	if err != nil {
		return out, "", err
	}
	dst, err := b.v.GetAttr(ctx, w.ino)
	if err != nil {
		b.drop(ctx, w)
		return out, "", b.fail("complete", err)
	}
	a, err := b.assemble(ctx, c, dst, srcs)
	if err != nil {
		b.drop(ctx, w)
		return out, "", b.fail("complete", err)
	}
	if _, err := b.publish(ctx, c, w, comps[len(comps)-1], record{ETag: etag, ContentType: up.ContentType, Meta: up.Meta, Parts: len(asked)}); err != nil {
		return out, "", err
	}
	b.log.Info("s3: multipart upload completed", "parts", len(asked), "shared_bytes", a.shared, "copied_bytes", a.copied)
	if err := b.removeUpload(ctx, c, dir.Ino, bucket, id); err != nil {
		b.log.Warn("s3: removing a completed upload failed (abort it to reclaim its parts)", "upload", id, "err", err)
	}
	return s3response.CompleteMultipartUploadResult{Bucket: &bucket, Key: &key, ETag: &etag}, "", nil
}
