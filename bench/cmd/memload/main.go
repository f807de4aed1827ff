// Command memload runs the workloads of bench/memory.sh that need more than
// a shell: fsx (test/fsx) on a directory, random writes and reads through a
// shared mmap of one file, and many-file creation. Each checks what it
// reads back and exits non-zero on a difference, so a memory figure is never
// quoted for a run that lost data.
//
//	memload fsx DIR OPS SEED
//	memload mmap DIR OPS SEED     (a 16 MiB file, 4 KiB to 256 KiB writes, msync every 16)
//	memload create DIR N          (N empty files in DIR/many, then stat them all)
package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"tessera/test/fsx"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: memload fsx DIR OPS SEED | mmap DIR OPS SEED | create DIR N")
		os.Exit(2)
	}
	dir := os.Args[2]
	n, err := strconv.Atoi(os.Args[3])
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "memload: count %q: want a positive integer\n", os.Args[3])
		os.Exit(2)
	}
	seed := uint64(1)
	if len(os.Args) > 4 {
		if seed, err = strconv.ParseUint(os.Args[4], 10, 64); err != nil {
			fmt.Fprintf(os.Stderr, "memload: seed %q: want an unsigned integer\n", os.Args[4])
			os.Exit(2)
		}
	}
	switch os.Args[1] {
	case "fsx":
		err = runFsx(dir, n, seed)
	case "mmap":
		err = runMmap(dir, n, seed)
	case "create":
		err = runCreate(dir, n)
	default:
		err = fmt.Errorf("unknown workload %q (fsx, mmap, create)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "memload %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func runFsx(dir string, ops int, seed uint64) error {
	d := filepath.Join(dir, "fsx")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	st, err := fsx.Run(fsx.Config{Dir: d, Seed: seed, Ops: ops})
	if err != nil {
		return err
	}
	fmt.Println(st.String())
	return nil
}

// runMmap writes random ranges of a 16 MiB file through a shared mapping
// and reads them back through the mapping and through read(2), after
// msync, against a model.
func runMmap(dir string, ops int, seed uint64) error {
	const size = 16 << 20
	p := filepath.Join(dir, "mmap.dat")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	defer syscall.Munmap(m)
	model := make([]byte, size)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, 256<<10)
	for i := range ops {
		n := 4<<10 + rng.IntN(252<<10)
		off := rng.IntN(size - n)
		for j := range buf[:n] {
			buf[j] = byte(rng.Uint32())
		}
		copy(m[off:off+n], buf[:n])
		copy(model[off:off+n], buf[:n])
		if i%16 == 15 {
			if _, _, e := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafePtr(m)), uintptr(len(m)), syscall.MS_SYNC); e != 0 {
				return fmt.Errorf("msync: %w", e)
			}
			roff := rng.IntN(size - len(buf))
			got := make([]byte, len(buf))
			if _, err := f.ReadAt(got, int64(roff)); err != nil {
				return fmt.Errorf("read at %d: %w", roff, err)
			}
			if !bytes.Equal(got, model[roff:roff+len(buf)]) {
				return fmt.Errorf("op %d: read(2) at %d differs from what was written through the mapping", i, roff)
			}
		}
	}
	if !bytes.Equal(m, model) {
		return fmt.Errorf("the mapping differs from the model after %d writes", ops)
	}
	fmt.Printf("%d mmap writes verified\n", ops)
	return nil
}

func runCreate(dir string, n int) error {
	d := filepath.Join(dir, "many")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	for i := range n {
		f, err := os.Create(filepath.Join(d, fmt.Sprintf("f%07d", i)))
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	for i := range n {
		if _, err := os.Stat(filepath.Join(d, fmt.Sprintf("f%07d", i))); err != nil {
			return err
		}
	}
	fmt.Printf("%d files created and stated\n", n)
	return nil
}
