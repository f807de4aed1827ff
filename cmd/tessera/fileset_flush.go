package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"tessera/internal/admin"
	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/gateway"
	"tessera/internal/gateway/writeback"
	"tessera/internal/meta"
	"tessera/internal/up"
)

// flushPoll is how often flush looks at the queue.
const flushPoll = 500 * time.Millisecond

// runFilesetFlush waits until the queue of the fileset at PATH (its
// directory on a Tessera mount) holds nothing but operations failed for good;
// those it lists, and then exits non-zero.
func runFilesetFlush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fileset flush", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	jsonOut := fs.Bool("json", false, "print progress and the result as JSON objects, one a line, on stdout")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: tessera fileset flush [flags] PATH (the fileset's directory on a mount)", errUsage)
	}
	p := pos[0]
	root, _, err := mountIno(p, false)
	if err != nil {
		return fmt.Errorf("fileset flush: %w", err)
	}
	if *cf.data == "" && *cf.meta.meta == "" {
		if *cf.data, err = dataDirOf(p); err != nil {
			return fmt.Errorf("fileset flush: %w", err)
		}
	}
	c, done, err := cf.dial(ctx, "fileset flush")
	if err != nil {
		return err
	}
	defer done()
	wa, ok := c.Meta.(meta.WritebackAPI)
	if !ok {
		return fmt.Errorf("fileset flush: the meta client has no write-back calls")
	}
	if err := wa.RequestFlush(ctx, root); err != nil {
		return fmt.Errorf("fileset flush %s: %w", p, err)
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

// printQueueFailures lists a fileset's write-back operations that failed
// for good (tessera fileset status; the depth and oldest age come from
// filesetQueueStatus).
func printQueueFailures(out io.Writer, st meta.WBStats) {
	fmt.Fprintf(out, "  failed      %d\n", len(st.Failed))
	for _, op := range st.Failed {
		fmt.Fprintf(out, "    %v %q %s after %d attempts: %s\n", op.Kind, op.Path, op.Path2, op.Attempts, op.Err)
	}
}

func init() {
	filesetQueueStatus = func(ctx context.Context, api meta.API, root meta.Ino) (int, time.Duration, error) {
		wa, ok := api.(meta.WritebackAPI)
		if !ok {
			return 0, 0, fmt.Errorf("the meta client has no write-back calls")
		}
		st, err := wa.WritebackStats(ctx, root)
		if err != nil {
			return 0, 0, err
		}
		var age time.Duration
		if st.Oldest != 0 {
			age = time.Since(time.Unix(0, st.Oldest)).Round(time.Millisecond)
		}
		return st.Depth, age, nil
	}
}

// withWriteback is a gateway that also applies the write-back queues of
// the sw and iw filesets (package gateway/writeback); Close stops both.
type withWriteback struct {
	fuse.Gateway
	hosts []*writeback.Host
	// wbOps counts the operations each host applied, by gateway.
	wbOps []*atomic.Uint64
}

// GatewayCounters reports each in-process gateway's counts (up.GatewayCounter:
// `tessera up` heartbeats them, and `fileset status` shows them as it
// shows gateway processes'): what its Ingester read from homes and the
// write-back operations its applier carried home.
func (g withWriteback) GatewayCounters() []meta.GatewayCounters {
	sg, ok := g.Gateway.(interface{ Stats() []gateway.Stats })
	if !ok {
		return nil
	}
	st := sg.Stats()
	out := make([]meta.GatewayCounters, len(st))
	for i, s := range st {
		out[i] = meta.GatewayCounters{BytesIngested: s.BytesFetch, Fetches: s.Ranges, Listings: s.Listings}
		if i < len(g.wbOps) {
			out[i].WritebackOps = g.wbOps[i].Load()
		}
	}
	return out
}

var _ up.GatewayCounter = withWriteback{}

// countingQueue counts the write-back operations an applier finished.
type countingQueue struct {
	writeback.Queue
	n *atomic.Uint64
}

func (q countingQueue) WritebackDone(ctx context.Context, op meta.WBOp, token string) error {
	err := q.Queue.WritebackDone(ctx, op, token)
	if err == nil {
		q.n.Add(1)
	}
	return err
}

func (g withWriteback) Close() error {
	var err error
	for _, h := range g.hosts {
		err = errors.Join(err, h.Close())
	}
	if c, ok := g.Gateway.(interface{ Close() error }); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// AddFilesetReads passes a mount's read counts on (meta.FilesetReadsAPI)
// when the gateway it wraps takes them: embedding fuse.Gateway alone would
// hide the method.
func (g withWriteback) AddFilesetReads(ctx context.Context, root meta.Ino, d meta.FilesetReads) error {
	ra, ok := g.Gateway.(meta.FilesetReadsAPI)
	if !ok {
		return fmt.Errorf("fileset read counts: the gateway takes none")
	}
	return ra.AddFilesetReads(ctx, root, d)
}

// Fileset passes the mount's reading of a fileset's settings on
// (meta.FilesetAPI's Fileset: the mode, to refuse updates in read-only
// filesets) when the gateway it wraps reads them.
func (g withWriteback) Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	fl, ok := g.Gateway.(interface {
		Fileset(context.Context, meta.Ino) (meta.Fileset, error)
	})
	if !ok {
		return meta.Fileset{}, fmt.Errorf("fileset %d: the gateway reads no fileset settings", root)
	}
	return fl.Fileset(ctx, root)
}

// hostWriteback starts a write-back applier per gateway client beside g.
// They share the queues through the meta service's claims.
func hostWriteback(g fuse.Gateway, svc *meta.Service, cs []*client.Client) fuse.Gateway {
	w := withWriteback{Gateway: g}
	for i, c := range cs {
		n := new(atomic.Uint64)
		w.wbOps = append(w.wbOps, n)
		a, err := writeback.New(writeback.Config{Queue: countingQueue{svc, n}, Source: writeback.ClientSource{C: c},
			Owner: fmt.Sprintf("gateway-%d-%d", os.Getpid(), i)})
		if err != nil {
			panic(err) // the arguments above are all given
		}
		w.hosts = append(w.hosts, writeback.StartHost(a, svc, time.Second, slog.Default()))
	}
	return w
}
