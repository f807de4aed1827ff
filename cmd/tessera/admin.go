package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tessera/internal/admin"
	"tessera/internal/meta/metarpc"
	"tessera/internal/up"
)

// clusterFlags are the flags every admin command takes to find the cluster.
type clusterFlags struct {
	data, meta *string
}

func addClusterFlags(fs *flag.FlagSet) clusterFlags {
	return clusterFlags{
		data: fs.String("data", "", "data directory of a `tessera up` (reads DIR/meta.addr)"),
		meta: fs.String("meta", "", "address of the meta service (host:port)"),
	}
}

// dial connects to the meta service named by the flags.
func (f clusterFlags) dial(name string) (*admin.Cluster, func(), error) {
	addr := *f.meta
	if addr == "" {
		if *f.data == "" {
			return nil, nil, fmt.Errorf("%w: give --data DIR or --meta ADDR (see tessera %s -h)", errUsage, name)
		}
		p := filepath.Join(*f.data, "meta.addr")
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot find the meta service of %s: %v (is `tessera up --data %s` running?)", *f.data, err, *f.data)
		}
		addr = strings.TrimSpace(string(b))
	}
	c, err := metarpc.Dial(addr, metarpc.DialOptions{})
	if err != nil {
		return nil, nil, err
	}
	return &admin.Cluster{Meta: c, Dial: up.DialAdmin}, func() { c.Close() }, nil
}

func runStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	c, done, err := cf.dial("status")
	if err != nil {
		return err
	}
	defer done()
	r, err := admin.Status(ctx, c)
	if err != nil {
		return err
	}
	r.Print(os.Stdout)
	return nil
}

func runGC(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	grace := fs.Duration("grace", time.Hour, "keep unreferenced blocks younger than this (writes in flight)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *grace < 0 {
		return fmt.Errorf("%w: --grace %v must not be negative", errUsage, *grace)
	}
	c, done, err := cf.dial("gc")
	if err != nil {
		return err
	}
	defer done()
	r, err := admin.GC(ctx, c, *grace, time.Now())
	fmt.Printf("gc: %d live blocks, %d scanned, removed %d blocks (%d bytes), kept %d unreferenced within the %v grace period\n",
		r.Live, r.Scanned, r.Removed, r.RemovedBytes, r.KeptYoung, *grace)
	return err
}

func runFsck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fsck", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	repair := fs.Bool("repair", false, "move corrupt copies aside (kept in the server's quarantine/) so that the mover restores them from good copies; without it fsck only reads")
	if err := parse(fs, args); err != nil {
		return err
	}
	c, done, err := cf.dial("fsck")
	if err != nil {
		return err
	}
	defer done()
	r, err := admin.Fsck(ctx, c, os.Stdout, admin.FsckOptions{Repair: *repair})
	if err != nil {
		return err
	}
	fmt.Printf("fsck: %d blocks, %d copies checked; %d corrupt copies (%d moved aside), %d lost blocks, %d impossible recipes\n",
		r.Blocks, r.Copies, r.Corrupt, r.Quarantined, r.Lost, r.Impossible)
	if n := r.Problems(); n > 0 {
		return fmt.Errorf("%d problem(s) found", n)
	}
	fmt.Println("fsck: clean")
	return nil
}
