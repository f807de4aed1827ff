package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"syscall"
)

// A PUT body crosses a rate-limited link a few packets at a time, and a
// reader woken for each piece pays a scheduler round trip per ~20 KiB (at
// eight block servers behind 50 MiB/s links on two cores: ~1,900 reads a
// second per server). While a body is read, the socket's receive low-water
// mark (SO_RCVLOWAT) asks the kernel to wake the reader only once
// lowatChunk bytes are queued, never more than what is still to come of
// this body: a mark beyond the body's end would wait for bytes that never
// come. There, reads fell to ~500 a second per server and the block
// servers' CPU for a 1 GiB write from 2.7 s to 1.9 s.
const lowatChunk = 256 << 10

// headerSlack bounds what the server's reader may already hold of a body
// when the handler starts (net/http reads requests through a 4 KiB buffer).
const headerSlack = 4 << 10

type connKey struct{}

// connContext records each connection in its requests' contexts, for
// readFull.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// readFull fills data from r's body, with the low-water mark raised while
// enough of the body is still to come. It returns how many reads it took.
func readFull(r *http.Request, data []byte) (reads int, err error) {
	raw := rawConn(r)
	if raw == nil || len(data) < 2*lowatChunk {
		_, err := io.ReadFull(r.Body, data)
		return 0, err
	}
	mark := 1
	set := func(v int) {
		if v != mark {
			mark = v
			_ = raw.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, v)
			})
		}
	}
	defer set(1) // the next request's header may be a few bytes
	for off := 0; off < len(data); {
		set(max(1, min(lowatChunk, len(data)-off-headerSlack)))
		n, err := r.Body.Read(data[off:])
		off += n
		reads++
		switch {
		case err == io.EOF && off < len(data):
			return reads, io.ErrUnexpectedEOF
		case err != nil && err != io.EOF:
			return reads, err
		}
	}
	return reads, nil
}

func rawConn(r *http.Request) syscall.RawConn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}
