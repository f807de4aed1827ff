// Command tiermount is `tessera mount` with client knobs the command line
// lacks: a shared memcached cache tier (for bench/imca.sh while cmd/tessera's
// mount has no --cache-tier flag) and the upload/fetch concurrency (for
// bench/striping.sh --uploads). It builds the same client and FUSE server as
// runMount in cmd/tessera/roles.go. SIGTERM/SIGINT unmount.
//
//	tiermount --meta ADDR [--cache-tier memcached://h1:p1,h2:p2] [--uploads 16] [--fetches 16]
//	          [--tls-cert F --tls-key F --tls-ca F] MNT
//
// Without the TLS flags it reaches the block servers over plain HTTP (a
// cluster run with --insecure).
//
// On exit it prints the client's tier counters: "tiermount: tier hits=H misses=M".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/up"
)

func main() {
	metaAddr := flag.String("meta", "", "meta service (host:port); required")
	tier := flag.String("cache-tier", "", "memcached://h1:p1,h2:p2 (empty: no tier)")
	uploads := flag.Int("uploads", 0, "concurrent block uploads (0: the client's default, 32)")
	fetches := flag.Int("fetches", 0, "concurrent block fetches (0: the client's default, 64)")
	cert := flag.String("tls-cert", "", "certificate (client-rw) for the block servers; none: plain HTTP")
	key := flag.String("tls-key", "", "its key")
	ca := flag.String("tls-ca", "", "the cluster CA's certificate")
	flag.Parse()
	if *metaAddr == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tiermount --meta ADDR [--cache-tier memcached://h:p,...] MNT")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var creds *auth.Credentials
	if *cert != "" || *key != "" || *ca != "" {
		var err error
		if creds, err = auth.LoadCredentials(*cert, *key, *ca); err != nil {
			fmt.Fprintln(os.Stderr, "tiermount:", err)
			os.Exit(2)
		}
	}
	if err := run(ctx, *metaAddr, *tier, *uploads, *fetches, creds, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "tiermount:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, metaAddr, tier string, uploads, fetches int, creds *auth.Credentials, mnt string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := up.CleanStaleMount(mnt, log); err != nil {
		return err
	}
	mc, err := dialMeta(metaAddr, creds)
	if err != nil {
		return err
	}
	defer mc.Close()
	cl, err := client.New(ctx, client.Config{Meta: mc, Dial: blockdial.New(creds).Block, Logger: log, CacheTier: tier, Uploads: uploads, Fetches: fetches})
	if err != nil {
		return err
	}
	srv, err := fuse.Mount(fuse.New(cl, fuse.Options{Logger: log}), mnt)
	if err != nil {
		cl.Close(context.Background())
		return err
	}
	fmt.Printf("tessera mount: ready mount=%s meta=%s tier=%s (bench tiermount)\n", mnt, metaAddr, tier)
	unmounted := make(chan struct{})
	go func() { srv.Wait(); close(unmounted) }()
	select {
	case <-ctx.Done():
	case <-unmounted:
	}
	uerr := up.Unmount(srv, mnt, log)
	cerr := cl.Close(context.Background())
	st := cl.Stats()
	fmt.Printf("tiermount: tier hits=%d misses=%d mem hits=%d misses=%d\n", st.TierHits, st.TierMisses, st.MemHits, st.MemMisses)
	return errors.Join(uerr, cerr)
}
