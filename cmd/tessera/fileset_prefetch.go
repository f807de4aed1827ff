package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"tessera/internal/admin"
	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/gateway"
	"tessera/internal/gateway/gwrpc"
	"tessera/internal/meta"
)

// prefetchChunk is how much of a file one step of `fileset prefetch`
// fetches (split among the gateways) between two progress reports.
const prefetchChunk = 64 << 20

// prefetchItem is a file to fetch: its path on the mount, inode and size.
type prefetchItem struct {
	path string
	ino  meta.Ino
	size int64
}

// runFilesetPrefetch is `tessera fileset prefetch PATH... | --list FILE`:
// it lists the directories given (through the mount, so their names come
// from home as any listing's) and fetches every file under them whole,
// through the live gateway processes when there are any (gwrpc.Router:
// AFM runs prefetch on the gateway nodes), else through --gateways
// clients of its own.
func runFilesetPrefetch(ctx context.Context, args []string) error {
	fset := flag.NewFlagSet("fileset prefetch", flag.ContinueOnError)
	cf := addClusterFlags(fset)
	list := fset.String("list", "", "a file naming the files and directories to fetch, one path on the mount a line (- for stdin)")
	ngw := fset.Int("gateways", 3, "how many gateway clients fetch in parallel (each a data-path client of its own) when no gateway process is live")
	jsonOut := fset.Bool("json", false, "print progress and the result as JSON objects, one a line, on stdout")
	pos, err := parseInterspersed(fset, args)
	if err != nil {
		return err
	}
	paths := pos
	if *list != "" {
		l, err := readPathList(*list)
		if err != nil {
			return fmt.Errorf("fileset prefetch: --list %s: %w", *list, err)
		}
		paths = append(paths, l...)
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: tessera fileset prefetch [flags] PATH... or --list FILE (files or directories on a mount)", errUsage)
	}
	if *ngw < 1 || *ngw > 64 {
		return fmt.Errorf("%w: fileset prefetch: --gateways %d: want 1 to 64", errUsage, *ngw)
	}
	out := newProgressOut(*jsonOut)
	var items []prefetchItem
	var total int64
	for _, p := range paths {
		err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil // directories are listed by the walk itself
			}
			var st syscall.Stat_t
			if err := syscall.Stat(q, &st); err != nil {
				return &os.PathError{Op: "stat", Path: q, Err: err}
			}
			items = append(items, prefetchItem{path: q, ino: meta.Ino(st.Ino), size: st.Size})
			total += st.Size
			out.report(admin.Progress{Op: "prefetch", Phase: "list", Done: int64(len(items))})
			return nil
		})
		if err != nil {
			return fmt.Errorf("fileset prefetch: %w", err)
		}
	}
	if *cf.data == "" && *cf.meta.meta == "" {
		if *cf.data, err = dataDirOf(paths[0]); err != nil {
			return fmt.Errorf("fileset prefetch: %w", err)
		}
	}
	c, done, err := cf.dial(ctx, "fileset prefetch")
	if err != nil {
		return err
	}
	defer done()
	ma, ok := c.Meta.(gateway.MetaAPI)
	if !ok {
		return fmt.Errorf("fileset prefetch: the meta client has no fileset calls")
	}
	creds, err := cf.tls.admin("fileset prefetch", *cf.data)
	if err != nil {
		return err
	}
	var grp fetcher
	if r := liveGateways(ctx, c.Meta, creds); r != nil {
		// The cluster's gateway processes fetch (AFM runs prefetch on
		// the gateway nodes): each file goes to its owner, which splits
		// it among them all, and they count what they ingested.
		defer r.Close()
		grp = r
	} else {
		dial := blockdial.New(creds).Block
		var gs []*gateway.Ingester
		for range *ngw {
			dc, err := client.New(ctx, client.Config{Meta: c.Meta, Dial: dial, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				return fmt.Errorf("fileset prefetch: %w", err)
			}
			defer dc.Close(context.WithoutCancel(ctx))
			gs = append(gs, gateway.NewIngester(ma, dc, gateway.Options{}))
		}
		g := gateway.NewGroup(gs...)
		defer g.Close()
		grp = g
	}

	var fetched, bytes int64
	var failed []map[string]any
	for _, it := range items {
		err := prefetchFile(ctx, grp, it, func(n int64) {
			bytes += n
			out.report(admin.Progress{Op: "prefetch", Phase: "fetch", Done: fetched, Total: int64(len(items)), Bytes: bytes, TotalBytes: total})
		})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			failed = append(failed, map[string]any{"path": it.path, "error": err.Error()})
			if !*jsonOut {
				fmt.Fprintf(os.Stderr, "fileset prefetch: %s: %v\n", it.path, err)
			}
			continue
		}
		fetched++
		out.report(admin.Progress{Op: "prefetch", Phase: "fetch", Done: fetched, Total: int64(len(items)), Bytes: bytes, TotalBytes: total})
	}
	out.finish()
	if len(failed) > 0 {
		err = fmt.Errorf("fileset prefetch: %d of %d files failed (listed above)", len(failed), len(items))
	}
	out.result("prefetch", map[string]any{"files": fetched, "bytes": bytes, "failed": failed}, err)
	if err == nil && !*jsonOut {
		fmt.Printf("fileset prefetch: %d files, %s cached\n", fetched, humanBytes(float64(bytes)))
	}
	return err
}

// fetcher is what fetches a file's blocks: the cluster's gateway
// processes (gwrpc.Router) or the command's own clients (gateway.Group).
type fetcher interface {
	Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error)
}

// liveGateways returns a Router over the cluster's gateway processes when
// at least one is live (registered and heartbeating), else nil.
func liveGateways(ctx context.Context, api meta.API, creds *auth.Credentials) *gwrpc.Router {
	ga, ok := api.(meta.GatewaysAPI)
	if !ok {
		return nil
	}
	l, err := ga.Gateways(ctx)
	if err != nil {
		return nil // an older service, or none registered: fetch here
	}
	for _, g := range l {
		if g.Live {
			return gwrpc.NewRouter(ga, creds, nil)
		}
	}
	return nil
}

// prefetchFile fetches file it whole through grp in chunks, calling step
// with the bytes of each chunk. A file in no fileset is an error.
func prefetchFile(ctx context.Context, grp fetcher, it prefetchItem, step func(int64)) error {
	for off := int64(0); ; off += prefetchChunk {
		n := min(prefetchChunk, it.size-off)
		in, err := grp.Fetch(ctx, it.ino, off, max(n, 0))
		if err != nil {
			return err
		}
		if n > 0 {
			step(n)
		}
		if in.Gateway == nil {
			return fmt.Errorf("not in a fileset")
		}
		if in.Gateway.State == meta.CacheCached || off+prefetchChunk >= it.size {
			if in.Gateway.State != meta.CacheCached {
				return fmt.Errorf("fetched to its end but not recorded cached (state %v)", in.Gateway.State)
			}
			if rest := it.size - off - max(n, 0); rest > 0 {
				step(rest) // cached already (by a reader or the prefetch setting)
			}
			return nil
		}
	}
}

// readPathList reads one path a line from file name (- for stdin),
// skipping empty lines and lines starting with #.
func readPathList(name string) ([]string, error) {
	f := os.Stdin
	if name != "-" {
		var err error
		if f, err = os.Open(name); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("names no path")
	}
	return out, nil
}
