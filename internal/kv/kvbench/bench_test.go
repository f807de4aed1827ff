package kvbench_test

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/boltkv"
	"tessera/internal/kv/memkv"
	"tessera/internal/kv/pebblekv"
)

var benchDir = flag.String("kvbench.dir", "", "directory for the durable engines' files, on a real disk (default: a new directory in /var/tmp)")

type engine struct {
	name string
	open func(dir string) (kv.Store, error)
}

func bolt(opts boltkv.Options) func(string) (kv.Store, error) {
	return func(dir string) (kv.Store, error) { return boltkv.Open(filepath.Join(dir, "meta.db"), opts) }
}

func pebble(opts pebblekv.Options) func(string) (kv.Store, error) {
	return func(dir string) (kv.Store, error) { return pebblekv.Open(dir, opts) }
}

var engines = []engine{
	{"memkv", func(string) (kv.Store, error) { return memkv.New(), nil }},
	{"bolt", bolt(boltkv.Options{})},
	{"bolt-batch-200us", bolt(boltkv.Options{Batch: true, MaxBatchDelay: 200 * time.Microsecond})},
	{"bolt-batch-1ms", bolt(boltkv.Options{Batch: true, MaxBatchDelay: time.Millisecond})},
	{"pebble", pebble(pebblekv.Options{})},
	{"pebble-pipelined", pebble(pebblekv.Options{PipelinedSync: true})},
}

// statFiles is how many files the stat benchmark spreads its lookups over.
const statFiles = 10_000

// BenchmarkFsync is the floor under every durable commit: append 4 KiB to a
// file and fsync it. Run it beside BenchmarkEngines to read the engines'
// figures as fsyncs per operation on the disk as loaded at the time.
func BenchmarkFsync(b *testing.B) {
	f, err := os.CreateTemp(dataRoot(b), "fsync-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	run(b, 1, func(int, *rand.Rand) error {
		if _, err := f.Write(block); err != nil {
			return err
		}
		return f.Sync()
	})
}

func BenchmarkEngines(b *testing.B) {
	root := dataRoot(b)
	for _, e := range engines {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/create/g=%d", e.name, workers), func(b *testing.B) {
				s := open(b, e, root)
				run(b, workers, func(i int, _ *rand.Rand) error {
					return create(s, fileName(i))
				})
			})
			b.Run(fmt.Sprintf("%s/stat/g=%d", e.name, workers), func(b *testing.B) {
				s := open(b, e, root)
				populate(b, s, statFiles)
				run(b, workers, func(_ int, rng *rand.Rand) error {
					return stat(s, fileName(rng.IntN(statFiles)))
				})
			})
		}
	}
}

// dataRoot returns -kvbench.dir, or a directory in /var/tmp removed when b
// ends.
func dataRoot(b *testing.B) string {
	if *benchDir != "" {
		return *benchDir
	}
	root, err := os.MkdirTemp("/var/tmp", "tessera-kvbench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	return root
}

// open opens e in a fresh directory that is removed, with the store, when b
// ends.
func open(b *testing.B, e engine, root string) kv.Store {
	dir, err := os.MkdirTemp(root, e.name+"-")
	if err != nil {
		b.Fatal(err)
	}
	s, err := e.open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
		os.RemoveAll(dir)
	})
	return s
}

// run calls op b.N times from workers goroutines and reports ops/s.
func run(b *testing.B, workers int, op func(i int, rng *rand.Rand) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range workers {
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		wg.Go(func() {
			for i := int(next.Add(1)); i <= b.N; i = int(next.Add(1)) {
				if err := op(i, rng); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// The key schema is a stand-in for the meta service's, with the same sizes.
const rootIno = 1

var (
	counterKey = []byte("C/next-ino")
	inodeBody  = make([]byte, 120-8)
	dentryBody = make([]byte, 40-8)
	errExists  = errors.New("file exists")
)

func fileName(i int) []byte { return fmt.Appendf(nil, "file-%09d", i) }

func dentryKey(parent uint64, name []byte) []byte {
	k := binary.BigEndian.AppendUint64([]byte("D"), parent)
	return append(k, name...)
}

func inodeKey(ino uint64) []byte { return binary.BigEndian.AppendUint64([]byte("I"), ino) }

// createTx creates name in the root directory.
func createTx(tx kv.Txn, name []byte) error {
	dk := dentryKey(rootIno, name)
	if _, ok, err := tx.Get(dk); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("create %s: %w", name, errExists)
	}
	ino := uint64(rootIno + 1)
	if v, ok, err := tx.Get(counterKey); err != nil {
		return err
	} else if ok {
		ino = binary.BigEndian.Uint64(v)
	}
	if err := tx.Put(counterKey, binary.BigEndian.AppendUint64(nil, ino+1)); err != nil {
		return err
	}
	if err := tx.Put(inodeKey(ino), append(binary.BigEndian.AppendUint64(nil, ino), inodeBody...)); err != nil {
		return err
	}
	return tx.Put(dk, append(binary.BigEndian.AppendUint64(nil, ino), dentryBody...))
}

func create(s kv.Store, name []byte) error {
	return s.Update(context.Background(), func(tx kv.Txn) error { return createTx(tx, name) })
}

func stat(s kv.Store, name []byte) error {
	return s.View(context.Background(), func(tx kv.Txn) error {
		d, ok, err := tx.Get(dentryKey(rootIno, name))
		if err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("stat %s: no dentry", name)
		}
		if _, ok, err := tx.Get(inodeKey(binary.BigEndian.Uint64(d))); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("stat %s: no inode", name)
		}
		return nil
	})
}

// populate creates files 0..n-1, many per Update.
func populate(b *testing.B, s kv.Store, n int) {
	const perUpdate = 1000
	for lo := 0; lo < n; lo += perUpdate {
		err := s.Update(context.Background(), func(tx kv.Txn) error {
			for i := lo; i < min(lo+perUpdate, n); i++ {
				if err := createTx(tx, fileName(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
