package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"tessera/internal/gateway/home"
)

// DefaultInFlight is how many home reads one fetch keeps in flight when
// Options.InFlight is zero: with the default 4 MiB chunk, 16 MiB. One read
// at a time leaves a WAN link idle for a round trip and a store per chunk
// (bench/results/2026-11-25-gateway.md); a few in flight fill it while
// the memory a fetch holds stays bounded (InFlight x Chunk).
const DefaultInFlight = 4

// DefaultMaxBuffered is Options.MaxBuffered's default: what the windows of
// all of an Ingester's fetches hold at once, 64 MiB (four whole windows
// of the default chunk and depth). Without it a fetch split into many
// pieces (a Fetch of a whole 1 GiB file asks for 64 at once), or many
// callers' fetches, each held a window: 1.3 GiB for one client-ro caller
// (issue 23).
const DefaultMaxBuffered = 64 << 20

// readWindow reads [off, end) of home file path in ranges of chunk bytes
// with up to depth of them in flight, and hands each range to store in
// order of offset as soon as it and every range before it are read, so
// that storing one range overlaps reading the next ones. A range holds
// its buffer from its read until store returned; depth buffers are all
// the window ever holds. The first error (of a read or of store) stops
// the window: no later range is handed to store, the reads under way are
// cancelled and waited for, and the error is returned. reads is called
// once per home read (statistics).
//
// slots (nil: none) bounds the buffers of every window sharing it: a
// window takes a slot for each buffer it allocates, and gives its slots
// back when it returns. A window holding a buffer always goes on (its
// buffers come back as its ranges are stored, and it waits for a slot
// or for one of them, whichever comes first), so windows sharing slots
// cannot wait for each other for ever.
func readWindow(ctx context.Context, st home.Store, path string, off, end, chunk int64, depth int,
	slots chan struct{}, reads func(n int), store func(pos int64, p []byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	depth = max(depth, 1)
	type result struct {
		pos int64
		buf []byte // the whole buffer, returned to free once stored
		p   []byte // what was read
		err error
	}
	// free holds the buffers of ranges stored, for the next reads; the
	// window allocates at most depth, each under a slot of slots.
	free := make(chan []byte, depth)
	allocated := 0 // the producer's; read by stop once it has ended
	// order holds the ranges being read, in order of offset; it never
	// holds more than depth (one per buffer), so sending never blocks.
	order := make(chan chan result, depth)
	var readers sync.WaitGroup
	// stop cancels what is under way and waits until the producer and
	// every read have ended: nothing reads home or touches a buffer after
	// readWindow returned.
	stop := func() {
		cancel()
		for range order {
		}
		readers.Wait()
		if slots != nil {
			for range allocated {
				<-slots
			}
		}
	}
	defer stop()
	go func() {
		defer close(order)
		for pos := off; pos < end && ctx.Err() == nil; pos += chunk {
			var buf []byte
			// more takes a slot for another buffer while the window may
			// allocate one; nil (never ready) once it has depth.
			var more chan struct{}
			if allocated < depth {
				if more = slots; more == nil {
					more = make(chan struct{}, 1) // unbounded: always ready
				}
			}
			select {
			case buf = <-free:
			case more <- struct{}{}:
				allocated++
				buf = make([]byte, chunk)
			case <-ctx.Done():
				return
			}
			p := buf[:min(chunk, end-pos)]
			done := make(chan result, 1)
			order <- done
			readers.Add(1)
			go func(pos int64) {
				defer readers.Done()
				k, err := readFull(ctx, st, path, p, pos, reads)
				done <- result{pos: pos, buf: buf, p: p[:k], err: err}
			}(pos)
		}
	}()
	for done := range order {
		r := <-done
		if r.err != nil {
			return r.err
		}
		if err := store(r.pos, r.p); err != nil {
			return err
		}
		free <- r.buf
	}
	// order was closed: every range was stored, or ctx ended before the
	// last ones were started.
	return ctx.Err()
}

// readFull reads len(p) bytes of path at pos (several reads if the store
// returns fewer without an error); a file that ends before is an error
// wrapping io.ErrUnexpectedEOF.
func readFull(ctx context.Context, st home.Store, path string, p []byte, pos int64, reads func(int)) (int, error) {
	k := 0
	for k < len(p) {
		m, err := st.ReadAt(ctx, path, p[k:], pos+int64(k))
		k += m
		reads(m)
		if err != nil && !(errors.Is(err, io.EOF) && k == len(p)) {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("home file %q ended at %d, expected %d more bytes: %w", path, pos+int64(k), len(p)-k, io.ErrUnexpectedEOF)
			}
			return k, err
		}
		if m == 0 && err == nil {
			return k, fmt.Errorf("home file %q: read of %d bytes at %d returned nothing: %w", path, len(p)-k, pos+int64(k), io.ErrNoProgress)
		}
	}
	return k, nil
}
