package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/gateway"
	"tessera/internal/meta"
)

// filesetCommand is one subcommand of tessera fileset: its name, its
// arguments for the usage line, and its own run function (nil: runFileset
// handles it).
type filesetCommand struct {
	name, args string
	run        func(ctx context.Context, args []string) error
}

// filesetCommands are the subcommands of tessera fileset, in the order the
// help lists them; the usage line and tessera -h are made from it.
var filesetCommands = []filesetCommand{
	{"create", "PATH --home URL", nil},
	{"list", "", nil},
	{"status", "PATH", nil},
	{"revalidate", "PATH", nil},
	{"delete", "PATH", nil},
	{"flush", "PATH", runFilesetFlush},          // fileset_flush.go
	{"prefetch", "PATH...", runFilesetPrefetch}, // fileset_prefetch.go
	{"evict", "PATH", runFilesetEvict},          // fileset_evict.go
}

// filesetNames lists the subcommands' names: "a, b, ... or z".
func filesetNames(withArgs bool) string {
	var l []string
	for _, c := range filesetCommands {
		if withArgs && c.args != "" {
			l = append(l, c.name+" "+c.args)
		} else {
			l = append(l, c.name)
		}
	}
	return strings.Join(l[:len(l)-1], ", ") + " or " + l[len(l)-1]
}

// filesetUsage is the one line tessera fileset prints for bad arguments.
func filesetUsage() string {
	return "want " + filesetNames(true) + " (see tessera fileset -h)"
}

// filesetSummary is the line of tessera -h.
func filesetSummary() string {
	return filesetNames(false) + " filesets caching a home store"
}

const filesetHelp = `usage: tessera fileset create PATH --home URL [--mode ro|sw|lu|iw] [--validity-lag D] [--sync-lag D]
                              [--prefetch none|range|whole] [--conflicts cache-wins|home-wins|keep-both]
       tessera fileset list               every fileset: root inode, mode, home
       tessera fileset status PATH        a fileset's settings, what it holds in the cache, its write-back queue
       tessera fileset revalidate PATH    compare PATH (and what was listed under it) with home now, not
                                          after the validity lag; what changed is fetched again when read
       tessera fileset delete PATH        detach it (what it cached stays as ordinary files)
       tessera fileset flush PATH [--json]  wait until its write-back queue is drained
       tessera fileset prefetch PATH... | --list FILE [--gateways N] [--json]
                                          list the directories and fetch every file under them whole
       tessera fileset evict PATH [--json]  drop the cached data of the files under PATH (placeholders again,
                                          fetched from home when next read); files with local changes are kept
PATH is a directory on a Tessera mount (create makes it; it must be empty). Every
subcommand takes --data DIR or --meta ADDR (and the TLS flags) to reach the cluster
as an admin; given a PATH on a mount of a running ` + "`tessera up`" + ` it finds its data directory. A home URL is file:///DIR, s3://BUCKET/PREFIX or tessera://META/PATH.`

// runFileset is `tessera fileset create|list|status|delete`.
func runFileset(ctx context.Context, args []string) (err error) {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, filesetUsage())
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Println(filesetHelp)
		return nil
	}
	op := args[0]
	i := slices.IndexFunc(filesetCommands, func(c filesetCommand) bool { return c.name == op })
	if i < 0 {
		return fmt.Errorf("%w: unknown subcommand %q: %s", errUsage, op, filesetUsage())
	}
	if run := filesetCommands[i].run; run != nil {
		return run(ctx, args[1:])
	}
	fs := flag.NewFlagSet("fileset "+op, flag.ContinueOnError)
	cf := addClusterFlags(fs)
	var f meta.Fileset
	var mode *string
	if op == "create" {
		fs.StringVar(&f.Home, "home", "", "the home store's URL: file:///DIR, s3://BUCKET/PREFIX, tessera://META/PATH (required)")
		mode = fs.String("mode", "ro", "ro (read-only), sw (single writer), lu (local updates) or iw (independent writers)")
		fs.DurationVar(&f.ValidityLag, "validity-lag", meta.DefaultValidityLag, "how long what was read from home is trusted before it is compared with home again")
		fs.DurationVar(&f.SyncLag, "sync-lag", meta.DefaultSyncLag, "how long a local update may wait before it is written back (sw, iw)")
		fs.StringVar(&f.Prefetch, "prefetch", meta.PrefetchRange, "what a miss fetches beyond the reader's ranges: none, range or whole")
		fs.StringVar(&f.Conflicts, "conflicts", meta.ConflictsKeepBoth, "who wins when home and cache both changed an object: cache-wins, home-wins or keep-both")
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	want := 1
	if op == "list" {
		want = 0
	}
	if len(pos) != want {
		return fmt.Errorf("%w: fileset %s takes %d PATH argument(s), got %d: %s", errUsage, op, want, len(pos), filesetUsage())
	}
	if op == "create" {
		if f.Home == "" {
			return fmt.Errorf("%w: fileset create: --home URL is required", errUsage)
		}
		f.Mode = meta.FilesetMode(*mode)
		if err := f.Normalize(); err != nil {
			return fmt.Errorf("%w: fileset create: %v", errUsage, err)
		}
	}
	var root meta.Ino
	if want == 1 {
		var made bool
		if root, made, err = mountIno(pos[0], op == "create"); err != nil {
			return fmt.Errorf("fileset %s: %w", op, err)
		}
		if made {
			// A create that fails leaves nothing behind: not the
			// directory it made (Remove takes only an empty one).
			defer func() {
				if err != nil {
					os.Remove(pos[0])
				}
			}()
		}
	}
	if *cf.data == "" && *cf.meta.meta == "" && want == 1 {
		// A path on a mount of `tessera up`: its data directory says
		// where the meta service is and holds the admin credentials.
		if *cf.data, err = dataDirOf(pos[0]); err != nil {
			return fmt.Errorf("fileset %s: %w", op, err)
		}
	}
	c, done, err := cf.dial(ctx, "fileset "+op)
	if err != nil {
		return err
	}
	defer done()
	fa, ok := c.Meta.(meta.FilesetAPI)
	if !ok {
		return fmt.Errorf("fileset %s: the meta client has no fileset calls", op)
	}
	switch op {
	case "create":
		f.Root = root
		out, err := fa.CreateFileset(ctx, f)
		if err != nil {
			return fmt.Errorf("fileset create %s: %w", pos[0], err)
		}
		fmt.Printf("fileset %s: created (inode %d), home %s, mode %s\n", pos[0], out.Root, out.Home, out.Mode)
	case "list":
		l, err := fa.Filesets(ctx)
		if err != nil {
			return fmt.Errorf("fileset list: %w", err)
		}
		printFilesets(os.Stdout, l)
	case "status":
		out, err := fa.Fileset(ctx, root)
		if err != nil {
			return fmt.Errorf("fileset status %s: %w", pos[0], err)
		}
		printFilesetStatus(os.Stdout, pos[0], out)
		u, err := gateway.CachedBytes(ctx, c.Meta, root, statusScanLimit)
		if err != nil {
			return fmt.Errorf("fileset status %s: %w", pos[0], err)
		}
		printCacheUsage(os.Stdout, u)
		if err := printGatewayStatus(ctx, os.Stdout, c.Meta); err != nil { // fileset_gateways.go
			return fmt.Errorf("fileset status %s: %w", pos[0], err)
		}
		if filesetQueueStatus != nil {
			depth, oldest, err := filesetQueueStatus(ctx, c.Meta, root)
			if err != nil {
				return fmt.Errorf("fileset status %s: write-back queue: %w", pos[0], err)
			}
			fmt.Printf("  queue       %d entries, oldest %v\n", depth, oldest)
			if wa, ok := c.Meta.(meta.WritebackAPI); ok {
				st, err := wa.WritebackStats(ctx, root)
				if err != nil {
					return fmt.Errorf("fileset status %s: write-back queue: %w", pos[0], err)
				}
				printQueueFailures(os.Stdout, st) // fileset_flush.go
			}
		}
	case "revalidate":
		ma, ok := c.Meta.(gateway.MetaAPI)
		if !ok {
			return fmt.Errorf("fileset revalidate: the meta client has no fileset calls")
		}
		g := gateway.NewIngester(ma, nil, gateway.Options{})
		defer g.Close()
		checked, changed, err := g.RevalidateTree(ctx, root)
		if err != nil {
			return fmt.Errorf("fileset revalidate %s: %w", pos[0], err)
		}
		fmt.Printf("fileset revalidate %s: %d checked, %d changed at home and invalidated\n", pos[0], checked, changed)
	case "delete":
		if err := fa.DeleteFileset(ctx, root); err != nil {
			return fmt.Errorf("fileset delete %s: %w", pos[0], err)
		}
		fmt.Printf("fileset %s: deleted; its files stay\n", pos[0])
	}
	return nil
}

// mountIno returns the inode of directory path on a Tessera mount (the
// mount's inode numbers are the meta service's), making it first when
// mkdir is set and it does not exist; made reports that it did (and is
// false with an error: what it made is removed again).
func mountIno(path string, mkdir bool) (ino meta.Ino, made bool, err error) {
	if mkdir {
		err := os.Mkdir(path, 0o755)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return 0, false, err
		}
		made = err == nil
	}
	defer func() {
		if err != nil && made {
			os.Remove(path)
			made = false
		}
	}()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, made, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return 0, made, fmt.Errorf("%s is not a directory", path)
	}
	if err := (sysXattrs{}).check(path); err != nil {
		return 0, made, err
	}
	return meta.Ino(st.Ino), made, nil
}

func printFilesets(out io.Writer, l []meta.Fileset) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROOT\tMODE\tSTATE\tVALIDITY\tSYNC\tPREFETCH\tCONFLICTS\tHOME")
	for _, f := range l {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%v\t%v\t%s\t%s\t%s\n", f.Root, f.Mode, f.State, f.ValidityLag, f.SyncLag, f.Prefetch, f.Conflicts, f.Home)
	}
	tw.Flush()
}

// filesetQueueStatus, when set (by the write-back queue's code, package
// gateway/writeback), reports the depth of fileset root's write-back queue
// and the age of its oldest entry (the measured sync lag) for `tessera
// fileset status`.
var filesetQueueStatus func(ctx context.Context, api meta.API, root meta.Ino) (depth int, oldest time.Duration, err error)

// statusScanLimit bounds the walk that sums what a fileset holds in the
// cache (gateway.CachedBytes); past it status shows lower bounds.
const statusScanLimit = 1_000_000

// printHitRatio prints the mounts' hit ratio: bytes read from the cache
// against bytes that needed a gateway (meta.FilesetReads; reads the
// kernel's page cache answered are not counted).
func printHitRatio(out io.Writer, r meta.FilesetReads) {
	if r.HitBytes+r.MissBytes == 0 {
		fmt.Fprintf(out, "  hit ratio   - (nothing read through a mount yet)\n")
		return
	}
	fmt.Fprintf(out, "  hit ratio   %.1f%% (%s read from the cache, %s fetched from home first)\n",
		100*r.Ratio(), humanBytes(float64(r.HitBytes)), humanBytes(float64(r.MissBytes)))
}

// printCacheUsage prints what a fileset holds in the cache.
func printCacheUsage(out io.Writer, u gateway.CacheUsage) {
	atLeast := ""
	if u.Truncated {
		atLeast = "at least "
	}
	fmt.Fprintf(out, "  cached      %s%s in %d files whole, %d partly; %d placeholders\n",
		atLeast, humanBytes(float64(u.Bytes)), u.Files, u.Partial, u.Placeholders)
}

// printFilesetStatus prints a fileset's settings.
func printFilesetStatus(out io.Writer, path string, f meta.Fileset) {
	fmt.Fprintf(out, "fileset %s (inode %d)\n", path, f.Root)
	fmt.Fprintf(out, "  home        %s\n", f.Home)
	fmt.Fprintf(out, "  mode        %s\n", f.Mode)
	fmt.Fprintf(out, "  state       %s\n", f.State)
	fmt.Fprintf(out, "  created     %s\n", time.Unix(0, f.Created).UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "  validity    %v\n", f.ValidityLag)
	fmt.Fprintf(out, "  sync lag    %v\n", f.SyncLag)
	fmt.Fprintf(out, "  prefetch    %s\n", f.Prefetch)
	printHitRatio(out, f.Reads)
	fmt.Fprintf(out, "  conflicts   %s\n", f.Conflicts)
}

// newGateway is up.GatewayFunc: an Ingester per client, as a Group, and
// a write-back applier per client.
func newGateway(svc *meta.Service, cs []*client.Client) fuse.Gateway {
	var gs []*gateway.Ingester
	for _, c := range cs {
		gs = append(gs, gateway.NewIngester(svc, c, gateway.Options{}))
	}
	return hostWriteback(gateway.NewGroup(gs...), svc, cs) // fileset_flush.go
}
