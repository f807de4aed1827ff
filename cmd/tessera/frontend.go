package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/meta/metarpc"
	"tessera/internal/up"
)

// frontEndFlags are the flags every protocol front end (tessera nfs,
// tessera s3) shares: it is a Tessera client like a mount, so it takes a
// mount's meta address, memory, policy, meta timeout, site and identity.
type frontEndFlags struct {
	name        string // the subcommand, for messages
	meta        metaAddrFlags
	mem         memFlags
	pol         *policyFlag
	metaTimeout metaTimeoutFlag
	site        siteFlag
	tls         *tlsFlags
}

// addFrontEndFlags adds them to fs; siteHelp says where the front end
// runs, for --site.
func addFrontEndFlags(fs *flag.FlagSet, siteHelp string) *frontEndFlags {
	return &frontEndFlags{
		name:        fs.Name(),
		meta:        addMetaAddrFlags(fs, metaFlagUsage+"; required"),
		mem:         addMemFlags(fs),
		pol:         addPolicyFlag(fs),
		metaTimeout: addMetaTimeoutFlag(fs),
		site:        addSiteFlag(fs, siteHelp),
		tls:         addTLSFlags(fs),
	}
}

// clientBase is the client configuration the memory flags describe,
// for the front end's memory parts.
func (f *frontEndFlags) clientBase() client.Config {
	return client.Config{MemCacheBytes: *f.mem.cache, DirtyBytes: *f.mem.dirty}
}

// frontEnd is a started front end's connection to its cluster.
type frontEnd struct {
	creds  *auth.Credentials
	log    *slog.Logger
	meta   *metarpc.Many
	client client.Config // ready for up.StartNFS / up.StartS3
}

// connect checks the flags, takes the identity (one of roles; check, if
// set, refuses one the front end cannot serve with), sets the memory limit
// to the sum of parts and dials the meta service. The caller closes
// fe.meta.
func (f *frontEndFlags) connect(ctx context.Context, roles []auth.Role, check func(*auth.Credentials) error, parts []memPart) (*frontEnd, error) {
	if err := f.mem.check(); err != nil {
		return nil, err
	}
	site, err := f.site.value()
	if err != nil {
		return nil, err
	}
	waitMeta, err := f.metaTimeout.value()
	if err != nil {
		return nil, err
	}
	t, err := f.meta.resolve(ctx, "")
	if err != nil {
		return nil, err
	}
	if len(t.addrs) == 0 {
		return nil, fmt.Errorf("%w: --meta ADDR is required (see tessera %s -h)", errUsage, f.name)
	}
	creds, err := f.tls.role(f.name, up.MountCertName, roles)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(creds); err != nil {
			return nil, err
		}
	}
	log := newLogger(false)
	limitMemory(memTotal(parts))
	log.Info("memory bound", "total_mib", memTotal(parts)>>20, "parts", memBoundLine(parts))
	mc, err := t.dial(ctx, creds, log)
	if err != nil {
		return nil, err
	}
	return &frontEnd{creds: creds, log: log, meta: mc, client: client.Config{
		Meta: mc, Dial: blockdial.New(creds).Block, Logger: log, Policy: f.pol.String(),
		MemCacheBytes: *f.mem.cache, DirtyBytes: *f.mem.dirty, MetaTimeout: waitMeta, Site: site,
	}}, nil
}

// serveUntil waits until ctx ends or the front end stops by itself
// (done), then closes it; the error is why it stopped, if not ctx.
func serveUntil(ctx context.Context, done <-chan error, closeFn func() error) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-done:
	}
	if cerr := closeFn(); cerr != nil && err == nil && !errors.Is(cerr, context.Canceled) {
		err = cerr
	}
	return err
}
