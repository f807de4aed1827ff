package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"tessera/internal/auth"
	"tessera/internal/nfs"
	"tessera/internal/up"
)

// nfsFlags are the NFS server's settings, shared by tessera nfs and
// tessera up --nfs.
type nfsFlags struct {
	export, squash, allow *string
}

const squashHelp = "whose identity NFS callers' AUTH_SYS uid and gid are taken as: root (uid 0 becomes nobody, 65534), all (every caller is nobody) or none (trusted as sent)"

// addNFSFlags adds --export, --squash and --allow. squashDefault is
// --squash's default; "" (tessera up) means it follows the address
// served (squashFor), which squashDefaultHelp explains.
func addNFSFlags(fs *flag.FlagSet, squashDefault, squashDefaultHelp string) nfsFlags {
	return nfsFlags{
		export: fs.String("export", "/", "the directory NFS clients get as their root (mount it as / or as this path)"),
		squash: fs.String("squash", squashDefault, squashHelp+squashDefaultHelp),
		allow:  fs.String("allow", "", "NFS clients allowed to connect: CIDR prefixes or addresses, comma-separated (default any); others are refused at connect"),
	}
}

// upSquashHelp says what tessera up's --squash is when not given.
const upSquashHelp = " (default none when --nfs is a loopback address: the all-in-one setup is one user's, whose root writes where root may; root otherwise)"

// squashFor is the squash mode of an NFS server on listen when --squash
// was not given: none on a loopback address (only this machine's users
// reach it, and tessera up's export root is root's), root otherwise.
func squashFor(listen string) nfs.Squash {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nfs.SquashRoot
	}
	if host == "localhost" {
		return nfs.SquashNone
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return nfs.SquashNone
	}
	return nfs.SquashRoot
}

// config returns the flags as an nfs.Config; listen is the address
// served (it decides --squash when that was not given).
func (f nfsFlags) config(listen string) (nfs.Config, error) {
	var c nfs.Config
	sq := nfs.Squash(*f.squash)
	if sq == "" {
		sq = squashFor(listen)
	}
	switch s := sq; s {
	case nfs.SquashRoot, nfs.SquashAll, nfs.SquashNone:
		c.Squash = s
	default:
		return c, fmt.Errorf("%w: --squash %q: want root, all or none", errUsage, *f.squash)
	}
	if !strings.HasPrefix(*f.export, "/") {
		return c, fmt.Errorf("%w: --export %q: want an absolute path in the file system, such as /projects", errUsage, *f.export)
	}
	c.Export = *f.export
	for _, a := range strings.Split(*f.allow, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		p, err := netip.ParsePrefix(a)
		if err != nil {
			addr, aerr := netip.ParseAddr(a)
			if aerr != nil {
				return c, fmt.Errorf("%w: --allow %q: want CIDR prefixes or addresses such as 10.0.0.0/8,192.168.1.7", errUsage, a)
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		c.Allow = append(c.Allow, p.Masked())
	}
	return c, nil
}

// nfsHelp is the -h text of the NFS server's address flags.
const nfsHelp = "NFSv3 and MOUNT answer on this one port (libnfs: nfs://HOST/DIR/FILE?nfsport=P&mountport=P, " +
	"and nfs://HOST//FILE for a file in the export's root: libnfs 4 mounts the path's directory and refuses an empty one); " +
	"no portmapper registration, and file locks (NLM) are not served: lock on one client only"

func runNFS(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("nfs", flag.ContinueOnError)
	fe := addFrontEndFlags(fs, "the site this server runs in: blocks are read from its servers first, then from the nearest site")
	listen := fs.String("listen", "", "HOST:PORT the NFS server listens on; required. "+nfsHelp)
	nf := addNFSFlags(fs, "root", "")
	readOnly := fs.Bool("read-only", false, "refuse every change with NFS3ERR_ROFS (always so for a client-ro certificate)")
	memParts := func() []memPart {
		return append(nfsMemParts(fe.clientBase(), ""), memPart{"runtime, per-inode state", roleFixedBytes})
	}
	if err := parse(fs, args); err != nil {
		return helpMem(err, memParts)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (see tessera nfs -h)", errUsage, fs.Arg(0))
	}
	if *listen == "" {
		return fmt.Errorf("%w: --listen HOST:PORT is required (see tessera nfs -h)", errUsage)
	}
	if _, _, err := net.SplitHostPort(*listen); err != nil {
		return fmt.Errorf("%w: --listen %q: want HOST:PORT", errUsage, *listen)
	}
	cfg, err := nf.config(*listen)
	if err != nil {
		return err
	}
	cfg.ReadOnly = *readOnly
	c, err := fe.connect(ctx, []auth.Role{auth.RoleClientRW, auth.RoleClientRO, auth.RoleAdmin}, nil, memParts())
	if err != nil {
		return err
	}
	defer c.meta.Close()
	creds, log := c.creds, c.log
	if creds != nil && creds.HasCert() && !creds.Identity.Role.Can(auth.WriteNamespace) {
		cfg.ReadOnly = true
		log.Info("nfs: read-only, the identity may only read", "identity", creds.Identity.Name, "role", string(creds.Identity.Role))
	}
	cfg.ClusterID = nfs.ClusterID(creds)
	node, err := up.StartNFS(ctx, up.NFSConfig{Listen: *listen, Server: cfg, Client: c.client})
	if err != nil {
		return err
	}
	fmt.Printf("tessera nfs: ready nfs=%s meta=%s export=%s\n", node.Addr, c.meta.Addr(), *nf.export)
	return serveUntil(ctx, node.Done(), node.Close)
}
