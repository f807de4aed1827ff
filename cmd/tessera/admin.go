package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tessera/internal/admin"
	"tessera/internal/blockdial"
	"tessera/internal/statuspage"
)

// clusterFlags are the flags every admin command takes to find the cluster.
type clusterFlags struct {
	data *string
	meta metaAddrFlags
	tls  *tlsFlags
}

func addClusterFlags(fs *flag.FlagSet) clusterFlags {
	return clusterFlags{
		data: fs.String("data", "", "data directory `DIR` of a running tessera up (reads DIR/meta.addr, and uses DIR/tls/admin.* without TLS flags)"),
		meta: addMetaAddrFlags(fs, metaFlagUsage),
		tls:  addAdminTLSFlags(fs),
	}
}

// dial connects to the meta service named by the flags.
func (f clusterFlags) dial(ctx context.Context, name string) (*admin.Cluster, func(), error) {
	t, err := f.meta.resolve(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	if len(t.addrs) == 0 {
		if *f.data == "" {
			return nil, nil, fmt.Errorf("%w: give --data DIR or --meta ADDR (see tessera %s -h)", errUsage, name)
		}
		p := filepath.Join(*f.data, "meta.addr")
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot find the meta service of %s: %v (is `tessera up --data %s` running?)", *f.data, err, *f.data)
		}
		t.addrs = []string{strings.TrimSpace(string(b))}
	}
	creds, err := f.tls.admin(name, *f.data)
	if err != nil {
		return nil, nil, err
	}
	m, err := t.dial(ctx, creds, nil)
	if err != nil {
		return nil, nil, err
	}
	return &admin.Cluster{Meta: m, Dial: blockdial.New(creds).Admin, Describe: describe(m)}, func() { m.Close() }, nil
}

func runStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	jsonOut := fs.Bool("json", false, "print the status as one JSON object (the status page's /status.json)")
	if err := parse(fs, args); err != nil {
		return err
	}
	c, done, err := cf.dial(ctx, "status")
	if err != nil {
		return err
	}
	defer done()
	r, err := admin.Status(ctx, c)
	if err != nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(statuspage.FromReport(r, time.Now()))
	}
	r.Print(os.Stdout)
	return nil
}

func runGC(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	grace := fs.Duration("grace", time.Hour, "keep unreferenced blocks younger than this (writes in flight)")
	jsonOut := fs.Bool("json", false, "print progress and the result as JSON objects, one a line, on stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *grace < 0 {
		return fmt.Errorf("%w: --grace %v must not be negative", errUsage, *grace)
	}
	c, done, err := cf.dial(ctx, "gc")
	if err != nil {
		return err
	}
	defer done()
	out := newProgressOut(*jsonOut)
	c.Progress = out.report
	r, err := admin.GC(ctx, c, *grace, time.Now())
	out.finish()
	out.result("gc", map[string]any{"live": r.Live, "scanned": r.Scanned, "removed": r.Removed,
		"removed_bytes": r.RemovedBytes, "kept_young": r.KeptYoung, "grace_seconds": grace.Seconds()}, err)
	if !*jsonOut {
		fmt.Printf("gc: %d live blocks, %d scanned, removed %d blocks (%d bytes), kept %d unreferenced within the %v grace period\n",
			r.Live, r.Scanned, r.Removed, r.RemovedBytes, r.KeptYoung, *grace)
	}
	return err
}

func runFsck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fsck", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	repair := fs.Bool("repair", false, "move corrupt copies aside (kept in the server's quarantine/) so that the mover restores them from good copies; without it fsck only reads")
	jsonOut := fs.Bool("json", false, "print progress, each problem and the result as JSON objects, one a line, on stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	c, done, err := cf.dial(ctx, "fsck")
	if err != nil {
		return err
	}
	defer done()
	out := newProgressOut(*jsonOut)
	c.Progress = out.report
	var found io.Writer = os.Stdout
	if *jsonOut {
		found = &jsonLines{enc: out.enc, event: "problem"}
	} else if out.mode == modeBar {
		found = &barSafe{out: out, w: os.Stdout}
	}
	r, err := admin.Fsck(ctx, c, found, admin.FsckOptions{Repair: *repair})
	out.finish()
	failed := err != nil // not a problem found: fsck could not run to its end
	if !failed && r.Problems() > 0 {
		err = fmt.Errorf("%d problem(s) found", r.Problems())
	}
	out.result("fsck", map[string]any{"blocks": r.Blocks, "copies": r.Copies, "corrupt": r.Corrupt,
		"quarantined": r.Quarantined, "lost": r.Lost, "impossible": r.Impossible, "unreachable": r.Unreachable,
		"quotas": r.Quotas, "quota_drift": r.QuotaDrift, "problems": r.Problems(), "repair": *repair}, err)
	if *jsonOut || failed {
		return err
	}
	fmt.Printf("fsck: %d blocks, %d copies checked; %d corrupt copies (%d moved aside), %d lost blocks, %d impossible recipes; %d quotas checked, %d with usage unlike their tree\n",
		r.Blocks, r.Copies, r.Corrupt, r.Quarantined, r.Lost, r.Impossible, r.Quotas, r.QuotaDrift)
	if err != nil {
		return err
	}
	fmt.Println("fsck: clean")
	return nil
}
