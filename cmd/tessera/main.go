// Command tessera is the single binary of Tessera: every role (meta service,
// block server, FUSE mount, all-in-one) and every operator command is a
// subcommand. Only the command line lives here; the work is in internal/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"tessera/internal/memtrim"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{
	"up":      {"run meta, block servers and a FUSE mount in one process", runUp},
	"meta":    {"run the meta service", runMeta},
	"blockd":  {"run a block server", runBlockd},
	"mount":   {"mount a running cluster with FUSE", runMount},
	"nfs":     {"serve a running cluster over NFSv3 (no locks)", runNFS},
	"s3":      {"serve a running cluster over S3; manage its access keys", runS3},
	"gateway": {"run a fileset gateway (ingest from homes, write back to them)", runGateway},
	"status":  {"print files, bytes, blocks and servers", runStatus},
	"gc":      {"remove blocks no file refers to", runGC},
	"fsck":    {"check that every file's blocks exist and match their hashes", runFsck},
	"server":  {"list block servers; drain, undrain or remove one", runServer},
	"policy":  {"get or set a file's consistency policy; list the policies", runPolicy},
	"certs":   {"make a cluster CA, issue certificates and admin tokens", runCerts},
	"fileset": {filesetSummary(), runFileset},
	"quota":   {quotaSummary, runQuota},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tessera COMMAND [flags]   (tessera COMMAND -h for its flags)")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(os.Stdout)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	name := os.Args[1]
	cmd, ok := commands[name]
	if name == "gendocs" { // hidden: the generated reference (make docs)
		cmd, ok = command{run: runGendocs}, true
	}
	if !ok {
		fmt.Fprintf(os.Stderr, "tessera: unknown command %q (try tessera -h)\n", name)
		os.Exit(2)
	}
	// The daemons' heap is mostly block buffers (no pointers, cheap to
	// mark): collecting at 50% growth instead of 100% costs little CPU and
	// keeps their resident memory near what the caches are sized to.
	debug.SetGCPercent(50)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The first signal starts an orderly stop; a second one kills at once
	// (the default action, back once the handler is gone).
	go func() { <-ctx.Done(); stop() }()
	// After a burst the heap's garbage goes back to the system within
	// seconds, not minutes (internal/memtrim).
	go memtrim.Run(ctx, memtrim.Config{})
	err := cmd.run(ctx, os.Args[2:])
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "tessera %s: %s\n", name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "tessera %s: %v\n", name, err)
		if next := nextStep(err); next != "" {
			fmt.Fprintf(os.Stderr, "tessera %s: next: %s\n", name, next)
		}
		os.Exit(1)
	}
}

// errUsage marks errors in the command line.
var errUsage = errors.New("usage")

// parse parses args with fs; errors come back as one line wrapping errUsage,
// -h prints the flags.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if helpHook != nil {
				helpHook(fs)
				return err
			}
			printHelp(os.Stdout, fs)
			return err
		}
		return fmt.Errorf("%w: %v (see tessera %s -h)", errUsage, err, fs.Name())
	}
	return nil
}

// newLogger returns the structured logger every role writes to stderr.
func newLogger(debug bool) *slog.Logger {
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
