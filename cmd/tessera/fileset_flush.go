package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"tessera/internal/admin"
	"tessera/internal/gateway/writeback"
	"tessera/internal/meta"
)

// filesetCommands are the subcommands of `tessera fileset`.
var filesetCommands = map[string]command{
	"flush": {"wait until a fileset's write-back queue is drained", runFilesetFlush},
}

func runFileset(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: tessera fileset SUBCOMMAND (%s)", errUsage, subcommandNames(filesetCommands))
	}
	c, ok := filesetCommands[args[0]]
	if !ok {
		return fmt.Errorf("%w: unknown fileset subcommand %q (%s)", errUsage, args[0], subcommandNames(filesetCommands))
	}
	return c.run(ctx, args[1:])
}

func subcommandNames(m map[string]command) string {
	s := ""
	for n := range m {
		if s != "" {
			s += ", "
		}
		s += n
	}
	return s
}

// flushPoll is how often flush looks at the queue.
const flushPoll = 500 * time.Millisecond

// runFilesetFlush waits until the queue of the fileset at PATH (a path in
// the cluster's namespace) holds nothing but operations failed for good;
// those it lists, and then exits non-zero.
func runFilesetFlush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fileset flush", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	jsonOut := fs.Bool("json", false, "print progress and the result as JSON objects, one a line, on stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: tessera fileset flush [flags] PATH (the fileset's path in the namespace)", errUsage)
	}
	p := fs.Arg(0)
	c, done, err := cf.dial("fileset flush")
	if err != nil {
		return err
	}
	defer done()
	wa, ok := c.Meta.(meta.WritebackAPI)
	if !ok {
		return fmt.Errorf("fileset flush: the meta client has no write-back calls")
	}
	root, err := writeback.Resolve(ctx, c.Meta, p)
	if err != nil {
		return fmt.Errorf("fileset flush: %w", err)
	}
	out := newProgressOut(*jsonOut)
	var first, applied int64 = -1, 0
	progress := func(st meta.WBStats) {
		left := int64(st.Depth - len(st.Failed))
		if first < 0 {
			first = left
		}
		applied = max(applied, first-left)
		out.report(admin.Progress{Op: "flush", Phase: "drain", Done: applied, Total: max(first, applied+left)})
	}
	wait := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(flushPoll):
			return nil
		}
	}
	failed, err := writeback.WaitDrained(ctx, wa, root, wait, progress)
	out.finish()
	if err == nil && len(failed) > 0 {
		err = fmt.Errorf("fileset flush %s: %d operations failed for good (listed above; see tessera fileset status)", p, len(failed))
	}
	var list []map[string]any
	for _, op := range failed {
		list = append(list, map[string]any{"op": op.Kind.String(), "path": op.Path, "path2": op.Path2, "error": op.Err})
		if !*jsonOut {
			fmt.Fprintf(os.Stderr, "failed for good: %v %q %s: %s\n", op.Kind, op.Path, op.Path2, op.Err)
		}
	}
	out.result("flush", map[string]any{"fileset": p, "applied": applied, "failed": list}, err)
	if err == nil && !*jsonOut {
		fmt.Printf("fileset flush %s: queue drained (%d operations applied while waiting)\n", p, applied)
	}
	return err
}
