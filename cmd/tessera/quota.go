package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"tessera/internal/admin"
	"tessera/internal/meta"
)

// `tessera quota`: directory quotas (meta.QuotaAPI, issue 26).

const quotaSummary = "set, get, list or remove directory quotas (bytes and inodes under a directory)"

const quotaUsage = "want set PATH [--bytes B] [--inodes N], get PATH, list or remove PATH (see tessera quota -h)"

const quotaHelp = `usage: tessera quota set PATH [--bytes B] [--inodes N]   limit what the tree under PATH holds
       tessera quota get PATH                               its limits and usage
       tessera quota list                                   every quota: directory, usage, limits
       tessera quota remove PATH                            drop the quota (the tree keeps its files)
B takes K, M, G, T suffixes (powers of 1024: 10M, 1G); 0 is no limit; a limit set
leaves the other as it was. Writes, creates, renames and links past a limit fail
with EDQUOT ("Disk quota exceeded"); df in the tree shows the quota.
PATH is a directory on a Tessera mount, or a path in the cluster's namespace
(/projects/x) with --data DIR or --meta ADDR. Every subcommand takes --data DIR
or --meta ADDR (and the TLS flags) to reach the cluster as an admin; given a PATH
on a mount of a running ` + "`tessera up`" + ` it finds its data directory.`

// quotaArgs is a parsed `tessera quota` command line.
type quotaArgs struct {
	op            string
	path          string
	bytes, inodes sizeFlag
	cf            clusterFlags
}

// parseQuota parses a `tessera quota` command line (not -h).
func parseQuota(args []string) (quotaArgs, error) {
	var q quotaArgs
	if len(args) == 0 {
		return q, fmt.Errorf("%w: %s", errUsage, quotaUsage)
	}
	q.op = args[0]
	want := 1
	switch q.op {
	case "set", "get", "remove":
	case "list":
		want = 0
	default:
		return q, fmt.Errorf("%w: unknown subcommand %q: %s", errUsage, clip(q.op, 32), quotaUsage)
	}
	fs := flag.NewFlagSet("quota "+q.op, flag.ContinueOnError)
	q.cf = addClusterFlags(fs)
	if q.op == "set" {
		fs.Var(&q.bytes, "bytes", "the most bytes of regular files the tree may hold (`B`: 10M, 1G; 0: no limit)")
		fs.Var(&q.inodes, "inodes", "the most files, directories and links the tree may hold (`N`; 0: no limit)")
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return q, err
	}
	if len(pos) != want {
		return q, fmt.Errorf("%w: quota %s takes %d PATH argument(s), got %d: %s", errUsage, q.op, want, len(pos), quotaUsage)
	}
	if want == 1 {
		q.path = pos[0]
	}
	if q.op == "set" && !q.bytes.set && !q.inodes.set {
		return q, fmt.Errorf("%w: quota set: give --bytes B, --inodes N or both", errUsage)
	}
	return q, nil
}

// runQuota is `tessera quota set|get|list|remove`.
func runQuota(ctx context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Println(quotaHelp)
		return nil
	}
	q, err := parseQuota(args)
	if err != nil {
		return err
	}
	var mountDir meta.Ino // the directory's inode when PATH is on a mount
	if q.path != "" {
		if ino, _, err := mountIno(q.path, false); err == nil {
			mountDir = ino
			if *q.cf.data == "" && *q.cf.meta.meta == "" {
				if *q.cf.data, err = dataDirOf(q.path); err != nil {
					return fmt.Errorf("quota %s: %w", q.op, err)
				}
			}
		} else if !strings.HasPrefix(q.path, "/") || (*q.cf.data == "" && *q.cf.meta.meta == "") {
			return fmt.Errorf("quota %s: %w", q.op, err)
		}
	}
	c, done, err := q.cf.dial(ctx, "quota "+q.op)
	if err != nil {
		return err
	}
	defer done()
	qa, ok := c.Meta.(meta.QuotaAPI)
	if !ok {
		return fmt.Errorf("quota %s: the meta client has no quota calls", q.op)
	}
	dir := mountDir
	if q.path != "" && dir == 0 {
		if dir, err = namespaceDir(ctx, c, q.path); err != nil {
			return fmt.Errorf("quota %s: %w", q.op, err)
		}
	}
	return q.run(ctx, os.Stdout, qa, dir)
}

// run does the subcommand on directory dir.
func (q quotaArgs) run(ctx context.Context, out io.Writer, qa meta.QuotaAPI, dir meta.Ino) error {
	switch q.op {
	case "set":
		cur, err := qa.Quota(ctx, dir)
		if err != nil && !errors.Is(err, meta.ErrNotFound) {
			return fmt.Errorf("quota set %s: %w", q.path, err)
		}
		next := meta.Quota{Dir: dir, MaxBytes: cur.MaxBytes, MaxInodes: cur.MaxInodes}
		if q.bytes.set {
			next.MaxBytes = q.bytes.n
		}
		if q.inodes.set {
			next.MaxInodes = q.inodes.n
		}
		got, err := qa.SetQuota(ctx, next)
		if err != nil {
			return fmt.Errorf("quota set %s: %w", q.path, err)
		}
		printQuota(out, q.path, got)
	case "get":
		got, err := qa.Quota(ctx, dir)
		if errors.Is(err, meta.ErrNotFound) {
			return fmt.Errorf("quota get %s: no quota on this directory", q.path)
		}
		if err != nil {
			return fmt.Errorf("quota get %s: %w", q.path, err)
		}
		printQuota(out, q.path, got)
	case "list":
		l, err := qa.Quotas(ctx)
		if err != nil {
			return fmt.Errorf("quota list: %w", err)
		}
		printQuotas(out, l)
	case "remove":
		if err := qa.RemoveQuota(ctx, dir); err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return fmt.Errorf("quota remove %s: no quota on this directory", q.path)
			}
			return fmt.Errorf("quota remove %s: %w", q.path, err)
		}
		fmt.Fprintf(out, "quota %s: removed\n", q.path)
	}
	return nil
}

// namespaceDir resolves an absolute path in the cluster's namespace to its
// directory's inode.
func namespaceDir(ctx context.Context, c *admin.Cluster, path string) (meta.Ino, error) {
	ino := meta.RootIno
	for _, name := range strings.Split(path, "/") {
		if name == "" || name == "." {
			continue
		}
		in, err := c.Meta.Lookup(ctx, ino, name)
		if err != nil {
			return 0, fmt.Errorf("%s in the cluster's namespace: %w", path, err)
		}
		ino = in.Ino
	}
	return ino, nil
}

// limit shows a limit: "-" for none.
func limit(n uint64, human bool) string {
	switch {
	case n == 0:
		return "-"
	case human:
		return humanBytes(float64(n))
	}
	return fmt.Sprint(n)
}

func printQuota(out io.Writer, path string, q meta.Quota) {
	fmt.Fprintf(out, "quota %s (directory %d)\n", path, q.Dir)
	fmt.Fprintf(out, "  bytes   %s of %s (%d of %s)\n", humanBytes(float64(q.Bytes)), limit(q.MaxBytes, true), q.Bytes, limit(q.MaxBytes, false))
	fmt.Fprintf(out, "  inodes  %d of %s\n", q.Inodes, limit(q.MaxInodes, false))
}

func printQuotas(out io.Writer, l []meta.Quota) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIR\tBYTES\tMAX BYTES\tINODES\tMAX INODES")
	for _, q := range l {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\n", q.Dir, q.Bytes, limit(q.MaxBytes, false), q.Inodes, limit(q.MaxInodes, false))
	}
	tw.Flush()
}
