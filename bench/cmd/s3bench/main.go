// Command s3bench runs bench/s3.sh's jobs against an S3 endpoint with
// minio-go, so every target (Tessera's endpoint, versitygw's posix backend,
// JuiceFS's gateway) is driven by the same code.
//
//	s3bench -endpoint HOST:PORT -ak ID -sk SECRET -bucket B -job JOB ...
//
// Jobs:
//
//	putbig   -size S -streams N      one object of S bytes, multipart with N parts in flight
//	getbig   -size S -streams N      read it back with N ranged GETs in flight, checking every byte
//	small    -osize O -clients C -count K   K objects of O bytes: PUT, then GET (checked), then HEAD, C clients
//	list     -count K                K empty objects under one prefix (made once), then a full listing in pages of 1000
//	complete -parts P -psize S       an upload of P parts of S bytes, then its complete, timed alone
//
// Output, one line per timed phase: "job=putbig ops=1 bytes=1073741824 secs=12.345".
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	endpoint := flag.String("endpoint", "", "HOST:PORT")
	ak := flag.String("ak", "", "access key id")
	sk := flag.String("sk", "", "secret access key")
	bucket := flag.String("bucket", "bench", "bucket (made if missing)")
	job := flag.String("job", "", "putbig, getbig, small, list or complete")
	size := flag.Int64("size", 1<<30, "putbig, getbig: bytes")
	streams := flag.Int("streams", 8, "putbig, getbig: requests in flight")
	osize := flag.Int("osize", 4096, "small: object bytes")
	clients := flag.Int("clients", 1, "small: clients")
	count := flag.Int("count", 1000, "small, list: objects")
	parts := flag.Int("parts", 100, "complete: parts")
	psize := flag.Int64("psize", 8<<20, "complete: part bytes")
	flag.Parse()
	mc, err := minio.New(*endpoint, &minio.Options{Creds: credentials.NewStaticV4(*ak, *sk, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	if ok, err := mc.BucketExists(ctx, *bucket); err != nil {
		fail(err)
	} else if !ok {
		if err := mc.MakeBucket(ctx, *bucket, minio.MakeBucketOptions{}); err != nil {
			fail(err)
		}
	}
	b := &bench{mc: mc, core: minio.Core{Client: mc}, bucket: *bucket}
	switch *job {
	case "putbig":
		b.putBig(ctx, *size, *streams)
	case "getbig":
		b.getBig(ctx, *size, *streams)
	case "small":
		b.small(ctx, *osize, *clients, *count)
	case "list":
		b.list(ctx, *count)
	case "complete":
		b.complete(ctx, *parts, *psize)
	default:
		fail(fmt.Errorf("unknown job %q", *job))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "s3bench:", err)
	os.Exit(1)
}

func report(job string, ops int, bytes int64, d time.Duration) {
	fmt.Printf("job=%s ops=%d bytes=%d secs=%.3f\n", job, ops, bytes, d.Seconds())
}

type bench struct {
	mc     *minio.Client
	core   minio.Core
	bucket string
}

// pattern is byte i of the big object: cheap to make and to check.
func pattern(off int64, b []byte) {
	for i := range b {
		x := uint64(off + int64(i))
		b[i] = byte(x ^ x>>8 ^ x>>17)
	}
}

const partSize = 64 << 20

func (b *bench) putBig(ctx context.Context, size int64, streams int) {
	start := time.Now()
	up, err := b.core.NewMultipartUpload(ctx, b.bucket, "big", minio.PutObjectOptions{})
	if err != nil {
		fail(err)
	}
	n := int((size + partSize - 1) / partSize)
	done := make([]minio.CompletePart, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, partSize)
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				off := int64(i) * partSize
				l := min(partSize, size-off)
				pattern(off, buf[:l])
				p, err := b.core.PutObjectPart(ctx, b.bucket, "big", up, i+1, bytes.NewReader(buf[:l]), l, minio.PutObjectPartOptions{})
				if err != nil {
					fail(err)
				}
				done[i] = minio.CompletePart{PartNumber: i + 1, ETag: p.ETag}
			}
		}()
	}
	wg.Wait()
	if _, err := b.core.CompleteMultipartUpload(ctx, b.bucket, "big", up, done, minio.PutObjectOptions{}); err != nil {
		fail(err)
	}
	report("putbig", 1, size, time.Since(start))
}

func (b *bench) getBig(ctx context.Context, size int64, streams int) {
	start := time.Now()
	n := int((size + partSize - 1) / partSize)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, partSize)
			want := make([]byte, partSize)
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				off := int64(i) * partSize
				l := min(partSize, size-off)
				var o minio.GetObjectOptions
				o.SetRange(off, off+l-1)
				obj, err := b.mc.GetObject(ctx, b.bucket, "big", o)
				if err != nil {
					fail(err)
				}
				if _, err := io.ReadFull(obj, buf[:l]); err != nil {
					fail(fmt.Errorf("range %d+%d: %w", off, l, err))
				}
				obj.Close()
				pattern(off, want[:l])
				if !bytes.Equal(buf[:l], want[:l]) {
					fail(fmt.Errorf("range %d+%d: bytes differ", off, l))
				}
			}
		}()
	}
	wg.Wait()
	report("getbig", n, size, time.Since(start))
}

// run runs f(i) for i in [0, count) on clients goroutines and times it.
func run(job string, clients, count int, bytesPer int64, f func(i int) error) {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= count {
					return
				}
				if err := f(i); err != nil {
					fail(fmt.Errorf("%s %d: %w", job, i, err))
				}
			}
		}()
	}
	wg.Wait()
	report(job, count, int64(count)*bytesPer, time.Since(start))
}

func (b *bench) small(ctx context.Context, osize, clients, count int) {
	data := make([]byte, osize)
	pattern(int64(osize), data)
	key := func(i int) string { return fmt.Sprintf("small-%d/%d/%05d", osize, i%16, i) }
	run("put", clients, count, int64(osize), func(i int) error {
		_, err := b.mc.PutObject(ctx, b.bucket, key(i), bytes.NewReader(data), int64(osize), minio.PutObjectOptions{})
		return err
	})
	run("get", clients, count, int64(osize), func(i int) error {
		o, err := b.mc.GetObject(ctx, b.bucket, key(i), minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer o.Close()
		got, err := io.ReadAll(o)
		if err == nil && !bytes.Equal(got, data) {
			err = fmt.Errorf("%d bytes that differ", len(got))
		}
		return err
	})
	run("head", clients, count, 0, func(i int) error {
		_, err := b.mc.StatObject(ctx, b.bucket, key(i), minio.StatObjectOptions{})
		return err
	})
}

func (b *bench) list(ctx context.Context, count int) {
	prefix := fmt.Sprintf("list-%d/", count)
	have := 0
	for o := range b.mc.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err == nil {
			have++
		}
	}
	if have < count {
		run("list-fill", 16, count, 0, func(i int) error {
			_, err := b.mc.PutObject(ctx, b.bucket, fmt.Sprintf("%s%05d", prefix, i), bytes.NewReader(nil), 0, minio.PutObjectOptions{})
			return err
		})
	}
	start := time.Now()
	n := 0
	for o := range b.mc.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true, MaxKeys: 1000}) {
		if o.Err != nil {
			fail(o.Err)
		}
		n++
	}
	if n != count {
		fail(fmt.Errorf("listed %d keys of %d", n, count))
	}
	report("list", n, 0, time.Since(start))
}

func (b *bench) complete(ctx context.Context, parts int, psize int64) {
	up, err := b.core.NewMultipartUpload(ctx, b.bucket, "complete", minio.PutObjectOptions{})
	if err != nil {
		fail(err)
	}
	done := make([]minio.CompletePart, parts)
	buf := make([]byte, psize)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= parts {
					return
				}
				p, err := b.core.PutObjectPart(ctx, b.bucket, "complete", up, i+1, bytes.NewReader(buf), psize, minio.PutObjectPartOptions{})
				if err != nil {
					fail(err)
				}
				done[i] = minio.CompletePart{PartNumber: i + 1, ETag: p.ETag}
			}
		}()
	}
	wg.Wait()
	start := time.Now()
	if _, err := b.core.CompleteMultipartUpload(ctx, b.bucket, "complete", up, done, minio.PutObjectOptions{}); err != nil {
		fail(err)
	}
	report("complete", 1, int64(parts)*psize, time.Since(start))
}
