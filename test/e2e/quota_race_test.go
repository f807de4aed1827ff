package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// quotaRaceBlock is the block size of TestQuotaTwoMetasFillAtOnce's
// cluster, and so the most either writer can have in flight per file.
const quotaRaceBlock = 256 << 10

// TestQuotaTwoMetasFillAtOnce (issue 26 item 3): two `tessera meta` over one
// etcd, a mount on each, and a writer on each mount filling the same 4 MiB
// quota tree at once with files of 3 blocks, each fsync'd. The service
// checks the limit in the transaction of every change, so the tree never
// ends over the quota at all: what a writer had in flight (at most one
// block's worth per file, written to block servers but refused at its
// commit) is refused with EDQUOT and never counted. Both writers see
// EDQUOT; the tree (the refused files' committed parts included) ends
// within two files' worth of the limit (both could use the room); every file whose fsync and close succeeded reads back
// whole; and the usage the quota reports is the tree's as a walk finds it.
func TestQuotaTwoMetasFillAtOnce(t *testing.T) {
	needBinary(t)
	etcd := etcdtest.Start(t, 1)
	m := startMultiOpts(t, cluster.MultiOptions{
		BlockServers: 2,
		MetaDB:       etcd.URL("/quota"),
		MetaArgs:     []string{"--block-size", strconv.Itoa(quotaRaceBlock)},
	})
	metaB, err := m.AddMeta("--block-size", strconv.Itoa(quotaRaceBlock))
	must(t, err)
	mounts := []string{
		addMount(t, m).Mount(),
		addMount(t, m, "--meta", metaB.Addr()).Mount(),
	}
	must(t, os.Mkdir(filepath.Join(mounts[0], "q"), 0o755))
	const limit = 4 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if res, err := m.Run(ctx, "quota", "set", "/q", "--bytes", strconv.Itoa(limit)); err != nil || res.ExitCode != 0 {
		t.Fatalf("quota set: %v %+v", err, res)
	}

	const fileSize = 3 * quotaRaceBlock
	var wg sync.WaitGroup
	written := make([][]string, len(mounts)) // files fsync'd and closed
	errs := make([]error, len(mounts))       // the error that stopped each writer
	for w, mnt := range mounts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2*limit/fileSize+2; i++ { // bounded: twice what fits
				name := filepath.Join(mnt, "q", fmt.Sprintf("w%d-%03d", w, i))
				if err := writeStamped(name, w, i, fileSize); err != nil {
					errs[w] = err
					return
				}
				written[w] = append(written[w], filepath.Base(name))
			}
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if !errors.Is(err, syscall.EDQUOT) {
			t.Errorf("writer %d stopped with %v after %d files; want EDQUOT", w, err, len(written[w]))
		}
	}
	used := treeBytes(t, filepath.Join(mounts[1], "q"))
	t.Logf("files fsync'd: %d and %d; the tree holds %d bytes of %d", len(written[0]), len(written[1]), used, limit)
	if used > limit {
		t.Errorf("the quota tree holds %d bytes, over its %d-byte limit", used, limit)
	}
	if used < limit-2*fileSize {
		t.Errorf("the quota tree holds %d bytes: two writers left more than two files' room of the %d-byte limit", used, limit)
	}
	for w, names := range written {
		for _, name := range names {
			var i int
			fmt.Sscanf(name[len("w0-"):], "%d", &i)
			for _, mnt := range mounts {
				got, err := os.ReadFile(filepath.Join(mnt, "q", name))
				if err != nil || string(got) != string(stamp(w, i, fileSize)) {
					t.Errorf("%s through %s: %d bytes, %v; want the %d bytes written", name, mnt, len(got), err, fileSize)
				}
			}
		}
	}
	res, err := m.Run(ctx, "quota", "get", "/q")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("quota get: %v %+v", err, res)
	}
	got := regexp.MustCompile(`\((\d+) of`).FindStringSubmatch(res.Stdout)
	if got == nil || got[1] != strconv.FormatInt(used, 10) {
		t.Errorf("quota get reports %q; the walk finds %d bytes\n%s", got, used, res.Stdout)
	}
}

// writeStamped writes a file of n bytes that names writer w and file i at
// every offset, fsyncs and closes it, and returns the first error.
func writeStamped(path string, w, i, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(stamp(w, i, n))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// stamp is the content writeStamped writes.
func stamp(w, i, n int) []byte {
	b := make([]byte, n)
	rec := fmt.Appendf(nil, "w%d-%03d;", w, i)
	for off := 0; off < n; off += len(rec) {
		copy(b[off:], rec)
	}
	return b
}
