package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/gateway"
	"tessera/internal/gateway/gwrpc"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// runGateway is `tessera gateway`: a fileset gateway as its own process
// (package gateway/gwrpc).
func runGateway(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	ma := addMetaAddrFlags(fs, "meta service to register with; required. "+metaFlagUsage)
	listen := fs.String("listen", "127.0.0.1:0", "address `ADDR` of the Gateway service (mounts and other gateways call it)")
	id := fs.String("id", "", "the gateway's `NAME` in the registry (default: its certificate's name; needed without --tls-* flags)")
	siteF := addSiteFlag(fs, "the site this gateway runs in (shown by fileset status)")
	heartbeat := fs.Duration("heartbeat", meta.DefaultHeartbeat, "re-register with the meta service this often (gone after "+meta.GatewayTTL.String()+" without)")
	noWB := fs.Bool("no-writeback", false, "do not apply the filesets' write-back queues (other gateways do)")
	rangeSize := fs.Int64("range-size", 16<<20, "a fetch larger than this is split among the live gateways in ranges of this size (whole blocks)")
	fetchMem := fs.Int64("fetch-memory", gateway.DefaultMaxBuffered, "most bytes of home reads all fetches hold at once (at least 4 MiB, one read); with --meta-max-inflight-per-ip per calling address and the data path's dirty bytes, the bound on what the gateway holds above its idle size (docs/protocol.md)")
	mlf := addMetaLimitFlags(fs)
	tf := addTLSFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (see tessera gateway -h)", errUsage, fs.Arg(0))
	}
	if *ma.meta == "" {
		return fmt.Errorf("%w: --meta is required (see tessera gateway -h)", errUsage)
	}
	if *heartbeat <= 0 || *heartbeat >= meta.GatewayTTL {
		return fmt.Errorf("%w: --heartbeat %v: want more than 0 and less than %v", errUsage, *heartbeat, meta.GatewayTTL)
	}
	if *rangeSize < 1<<20 {
		return fmt.Errorf("%w: --range-size %d: want at least 1 MiB", errUsage, *rangeSize)
	}
	if *fetchMem < 4<<20 {
		return fmt.Errorf("%w: --fetch-memory %d: want at least 4 MiB (one home read)", errUsage, *fetchMem)
	}
	site, err := siteF.value()
	if err != nil {
		return err
	}
	limits, err := mlf.limits()
	if err != nil {
		return err
	}
	creds, err := tf.role("gateway", *id, []auth.Role{auth.RoleGateway}, *listen)
	if err != nil {
		return err
	}
	name, err := gatewayID(*id, creds)
	if err != nil {
		return err
	}
	log := newLogger(false).With("gateway", name)
	t, err := ma.resolve(ctx, "")
	if err != nil {
		return err
	}
	mc, err := t.dial(ctx, creds, log)
	if err != nil {
		return err
	}
	defer mc.Close()
	data, err := client.New(ctx, client.Config{Meta: mc, Dial: blockdial.New(creds).Block, Logger: log})
	if err != nil {
		return fmt.Errorf("gateway %s: data path: %w", name, err)
	}
	defer data.Close(context.Background())
	n, err := gwrpc.StartNode(ctx, gwrpc.NodeConfig{Meta: mc, Data: data, ID: name, Site: site, Listen: *listen,
		Creds: creds, Heartbeat: *heartbeat, Writeback: !*noWB, Logger: log, Ingest: gateway.Options{MaxBuffered: *fetchMem},
		Serve: metarpc.ServeOptions{MaxStreamsPerPeer: limits.Calls, MaxInFlightPerPeer: limits.InFlight}})
	if err != nil {
		return err
	}
	leaving := false
	defer func() {
		n.Close()
		if leaving {
			deregisterGateway(mc, name, log)
		}
	}()
	n.SetRangeSize(*rangeSize)
	fmt.Printf("tessera gateway: ready id=%s listen=%s meta=%s\n", name, n.Addr(), mc.Addr())
	select {
	case <-ctx.Done():
		leaving = true // SIGTERM or SIGINT: a clean stop
		return nil
	case err := <-n.Done():
		if err == nil || errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	}
}

// deregisterGateway removes a cleanly stopping gateway's record (after
// its heartbeats stopped), so that mounts stop routing to it at once
// rather than when its heartbeat lapses. A failure only leaves the record
// to lapse, as after a crash.
func deregisterGateway(ga meta.GatewaysAPI, name string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ga.RegisterGateway(ctx, meta.GatewayNode{ID: name, Addr: meta.GatewayLeaving}); err != nil {
		log.Warn("gateway: deregistering failed; the record lapses with its heartbeat", "err", err)
		return
	}
	log.Info("gateway: deregistered")
}

// gatewayID is the gateway's registry name: --id, else its certificate's
// name (the meta service binds a registration to it), else, on an
// --insecure loopback cluster, this host and process.
func gatewayID(id string, creds *auth.Credentials) (string, error) {
	switch {
	case creds != nil && id != "" && id != creds.Identity.Name:
		return "", fmt.Errorf("%w: --id %q differs from the certificate's name %q (the meta service registers a gateway only under its own name)", errUsage, id, creds.Identity.Name)
	case creds != nil:
		return creds.Identity.Name, nil
	case id != "":
		return id, nil
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid()), nil
}
