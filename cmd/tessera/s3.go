package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"text/tabwriter"
	"time"

	"tessera/internal/auth"
	"tessera/internal/s3"
	"tessera/internal/up"
)

// s3Help is the -h text of the S3 endpoint's address flags.
const s3Help = "S3 clients use path-style addressing (http://HOST:PORT/BUCKET/KEY) with a key from tessera s3 keys add; " +
	"plain HTTP only on a loopback address or with --insecure, else HTTPS with --tls-cert/--tls-key"

// s3Plain checks that an S3 endpoint may serve plain HTTP on listen: a
// loopback address, or --insecure.
func s3Plain(listen string, insecure bool) error {
	if err := s3.CheckListen(listen); err != nil {
		return fmt.Errorf("%w: --s3/--listen: %w", errUsage, err)
	}
	host, _, _ := net.SplitHostPort(listen)
	if insecure || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: the S3 endpoint on %s, which is not a loopback address, needs --tls-cert/--tls-key (HTTPS) or --insecure (plain HTTP: keys and data in the clear)", errUsage, listen)
}

func runS3(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "keys" {
		return s3KeysCommand(ctx, args[1:], os.Stdout, time.Now())
	}
	fs := flag.NewFlagSet("s3", flag.ContinueOnError)
	fe := addFrontEndFlags(fs, "the site this endpoint runs in: blocks are read from its servers first, then from the nearest site")
	listen := fs.String("listen", "", "HOST:PORT the S3 endpoint listens on; required. "+s3Help)
	root := fs.String("root", "/", "the directory whose subdirectories are the buckets (a key with a root of its own gets those under it)")
	memParts := func() []memPart {
		return append(s3MemParts(fe.clientBase(), ""), memPart{"runtime, per-inode state", roleFixedBytes})
	}
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: tessera s3 --meta ADDR --listen HOST:PORT [--root /dir]\n       tessera s3 keys add NAME --role rw|ro [--root /proj] [--json] | list | remove NAME   (tessera s3 keys -h)")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return helpMem(err, memParts)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (see tessera s3 -h)", errUsage, fs.Arg(0))
	}
	if *listen == "" {
		return fmt.Errorf("%w: --listen HOST:PORT is required (see tessera s3 -h)", errUsage)
	}
	if err := s3.CheckListen(*listen); err != nil {
		return fmt.Errorf("%w: --listen: %w", errUsage, err)
	}
	var certFile, keyFile string
	if *fe.tls.cert != "" && *fe.tls.key != "" {
		certFile, keyFile = *fe.tls.cert, *fe.tls.key
	} else if err := s3Plain(*listen, *fe.tls.insecure); err != nil {
		return err
	}
	unconfined := func(creds *auth.Credentials) error {
		if creds != nil && creds.HasCert() && creds.Identity.Root != "" && creds.Identity.Root != "/" {
			return fmt.Errorf("%w: the S3 endpoint reads access keys at the namespace's root: its certificate must not be confined (%s); confine the keys instead (tessera s3 keys add --root)", errUsage, creds.Identity.Root)
		}
		return nil
	}
	c, err := fe.connect(ctx, []auth.Role{auth.RoleClientRW, auth.RoleAdmin}, unconfined, memParts())
	if err != nil {
		return err
	}
	defer c.meta.Close()
	node, err := up.StartS3(ctx, up.S3Config{
		Client: c.client,
		Server: s3.ServerConfig{Listen: *listen, CertFile: certFile, KeyFile: keyFile, Backend: s3.Config{Root: *root}},
	})
	if err != nil {
		return err
	}
	fmt.Printf("tessera s3: ready s3=%s meta=%s root=%s\n", node.Addr, c.meta.Addr(), *root)
	return serveUntil(ctx, node.Done(), node.Close)
}

// s3KeysCommand is `tessera s3 keys add|list|remove`.
func s3KeysCommand(ctx context.Context, args []string, out io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("s3 keys", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	role := fs.String("role", "", "add: rw (read and write) or ro (read only)")
	root := fs.String("root", "", "add: confine the key to this subtree (/proj): its buckets are the directories under it")
	uid := fs.Uint("uid", 0, "add: the uid the key's requests are checked and create files as (default 0: root within its root)")
	gid := fs.Uint("gid", 0, "add: the gid likewise")
	jsonOut := fs.Bool("json", false, "print JSON: add prints one object {\"access_key_id\": …, \"secret_access_key\": …}")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: tessera s3 keys add NAME --role rw|ro [--root /proj] [--json] | list [--json] | remove NAME|ACCESS_KEY_ID\n"+
			"The secret is shown once, by add. Keys live in the meta store; reach the cluster with --data DIR or --meta and admin TLS flags.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want add NAME --role rw|ro, list or remove NAME (see tessera s3 keys -h)", errUsage)
	}
	op := pos[0]
	switch {
	case op == "add" && len(pos) == 2, op == "remove" && len(pos) == 2, op == "list" && len(pos) == 1:
	default:
		return fmt.Errorf("%w: want add NAME --role rw|ro, list or remove NAME (see tessera s3 keys -h)", errUsage)
	}
	var k s3.Key
	if op == "add" {
		if *uid > 1<<32-1 || *gid > 1<<32-1 {
			return fmt.Errorf("%w: --uid and --gid must fit 32 bits", errUsage)
		}
		if *role == "" {
			return fmt.Errorf("%w: add needs --role rw or --role ro", errUsage)
		}
		if k, err = s3.NewKey(s3.NewKeyRequest{Name: pos[1], Role: *role, Root: *root, Uid: uint32(*uid), Gid: uint32(*gid), Now: now.Unix()}); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	c, done, err := cf.dial(ctx, "s3 keys")
	if err != nil {
		return err
	}
	defer done()
	switch op {
	case "add":
		if err := s3.AddKey(ctx, c.Meta, k); err != nil {
			return err
		}
		if *jsonOut {
			return json.NewEncoder(out).Encode(map[string]string{"access_key_id": k.AccessKeyID, "secret_access_key": k.Secret,
				"name": k.Name, "role": k.Role, "root": k.Root})
		}
		fmt.Fprintf(out, "access key id:     %s\nsecret access key: %s\n(the secret is not shown again)\n", k.AccessKeyID, k.Secret)
	case "list":
		keys, err := s3.ListKeys(ctx, c.Meta)
		if err != nil {
			return err
		}
		if *jsonOut {
			type row struct {
				Name, AccessKeyID, Role, Root string
				Uid, Gid                      uint32
				Created                       int64
			}
			rows := make([]row, 0, len(keys))
			for _, k := range keys {
				rows = append(rows, row{k.Name, k.AccessKeyID, k.Role, k.Root, k.Uid, k.Gid, k.Created})
			}
			return json.NewEncoder(out).Encode(rows)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tACCESS KEY ID\tROLE\tROOT\tUID:GID\tCREATED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d:%d\t%s\n", k.Name, k.AccessKeyID, k.Role, k.Root, k.Uid, k.Gid,
				time.Unix(k.Created, 0).UTC().Format(time.DateTime))
		}
		return tw.Flush()
	case "remove":
		k, err := s3.RemoveKey(ctx, c.Meta, pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "removed s3 key %s (%s); S3 endpoints stop taking it within a few seconds\n", k.Name, k.AccessKeyID)
	}
	return nil
}
