package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"

	"tessera/internal/admin"
	"tessera/internal/gateway"
	"tessera/internal/meta"
)

// runFilesetEvict is `tessera fileset evict PATH`: the files under PATH
// (a directory or a file in a fileset, on a mount) give back their cached
// data and become placeholders of home's size; files the cache has
// changes of are kept and listed, and the command then exits non-zero.
func runFilesetEvict(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fileset evict", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	jsonOut := fs.Bool("json", false, "print progress and the result as JSON objects, one a line, on stdout")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: tessera fileset evict [flags] PATH (a directory or file of a fileset, on a mount)", errUsage)
	}
	p := pos[0]
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return fmt.Errorf("fileset evict: %w", &os.PathError{Op: "stat", Path: p, Err: err})
	}
	isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if !isDir && st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fmt.Errorf("%w: fileset evict: %s is neither a directory nor a regular file", errUsage, p)
	}
	if err := (sysXattrs{}).check(p); err != nil {
		return fmt.Errorf("fileset evict: %w", err)
	}
	if *cf.data == "" && *cf.meta.meta == "" {
		if *cf.data, err = dataDirOf(p); err != nil {
			return fmt.Errorf("fileset evict: %w", err)
		}
	}
	c, done, err := cf.dial(ctx, "fileset evict")
	if err != nil {
		return err
	}
	defer done()
	m, ok := c.Meta.(interface {
		gateway.TreeMeta
		meta.EvictAPI
	})
	if !ok {
		return fmt.Errorf("fileset evict: the meta client has no eviction call")
	}
	out := newProgressOut(*jsonOut)
	var res gateway.EvictResult
	if isDir {
		res, err = gateway.EvictTree(ctx, m, meta.Ino(st.Ino), func(d, n int) {
			out.report(admin.Progress{Op: "evict", Phase: "evict", Done: int64(d), Total: int64(n)})
		})
	} else {
		var in meta.Inode
		if in, err = m.EvictData(ctx, meta.Ino(st.Ino)); err == nil {
			res.Files, res.Bytes = 1, int64(in.Size)
		} else if errors.Is(err, meta.ErrDirty) {
			res.Dirty, err = []string{fmt.Sprintf("%s: %v", p, err)}, nil
		}
	}
	out.finish()
	if err == nil && len(res.Dirty) > 0 {
		err = fmt.Errorf("fileset evict %s: %d files kept: the cache has changes of them (listed above; tessera fileset flush writes them back)", p, len(res.Dirty))
	}
	if !*jsonOut {
		for _, d := range res.Dirty {
			fmt.Fprintf(os.Stderr, "kept: %s\n", d)
		}
	}
	out.result("evict", map[string]any{"path": p, "files": res.Files, "bytes": res.Bytes, "kept": res.Dirty}, err)
	if err == nil && !*jsonOut {
		fmt.Printf("fileset evict %s: %d files evicted (%s)\n", p, res.Files, humanBytes(float64(res.Bytes)))
	}
	return err
}
