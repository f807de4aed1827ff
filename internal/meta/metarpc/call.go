package metarpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// outgoing returns ctx carrying the protocol's metadata for a call.
func (c *Client) outgoing(ctx context.Context, session meta.SessionID) context.Context {
	kv := []string{mdProtocol, strconv.Itoa(c.protocol)}
	if session != 0 {
		kv = append(kv, mdSession, strconv.FormatUint(uint64(session), 10))
	}
	if c.token != "" {
		kv = append(kv, mdAuth, "Bearer "+c.token)
	}
	if meta.SerializableAllowed(ctx) {
		kv = append(kv, mdRead, readSerializable)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// call runs one unary call (rpc) and classifies its error: the API's error
// as the server sent it, else meta.ErrUnreachable (not sent),
// meta.ErrReplyLost (sent, no reply), auth errors, or meta.ErrIO.
func (c *Client) call(ctx context.Context, method string, rpc func(ctx context.Context, opts ...grpc.CallOption) error) error {
	if c.closed.Load() {
		return fmt.Errorf("meta %s %s: client closed: %w", c.addr, method, meta.ErrIO)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	octx := c.outgoing(ctx, c.session)
	for attempt := 0; ; attempt++ {
		var sent atomic.Bool
		var header metadata.MD
		err := rpc(context.WithValue(octx, sentKey{}, &sent), grpc.Header(&header))
		if err == nil {
			if err := versionMismatch(header, c.protocol); err != nil {
				return c.ioErr(method, err)
			}
			return nil
		}
		cerr, unsent := c.classify(ctx, method, err, sent.Load(), header)
		if !unsent || attempt > 0 {
			return cerr
		}
		// Not sent: the connection was down. Try it once more on a fresh
		// connection, as the server may have come back since it broke.
		if err := c.reconnect(ctx); err != nil {
			return fmt.Errorf("meta %s: %w", method, err)
		}
	}
}

// classify turns a failed call's error into the package's classes (see
// call); unsent reports a call that never left because the connection was
// down, which may be sent again.
func (c *Client) classify(ctx context.Context, method string, err error, sent bool, header metadata.MD) (_ error, unsent bool) {
	st := status.Convert(err)
	if apiErr, ok := apiError(st); ok {
		if dl, ok := ctx.Deadline(); ok && errors.Is(apiErr, meta.ErrIO) && (ctx.Err() != nil || time.Until(dl) < 50*time.Millisecond) {
			// The server gave up on the deadline we sent it before our
			// own timer fired: report it as the client's time-out.
			return c.lostErr(method, context.DeadlineExceeded), false
		}
		return apiErr, false
	}
	if err := versionMismatch(header, c.protocol); err != nil {
		return c.ioErr(method, err), false
	}
	switch {
	case c.closed.Load():
		return c.ioErr(method, errors.New(st.Message())), false // Close cut it: not an outage
	case st.Code() == codes.Unauthenticated:
		return fmt.Errorf("meta %s %s: %s: %w (%w)", c.addr, method, st.Message(), auth.ErrUnauthenticated, syscall.EACCES), false
	case st.Code() == codes.PermissionDenied:
		return fmt.Errorf("meta %s %s: %s: %w (%w)", c.addr, method, st.Message(), auth.ErrDenied, syscall.EACCES), false
	case st.Code() == codes.Unimplemented:
		// An older server (protocol 1 had one Meta service) does not
		// know the service; its gate did not run, so no version header.
		return c.ioErr(method, fmt.Errorf("the server does not serve this call (one older than protocol %d?): %s", c.protocol, st.Message())), false
	case st.Code() == codes.Canceled && ctx.Err() != nil:
		return c.ioErr(method, ctx.Err()), false
	case st.Code() == codes.DeadlineExceeded || ctx.Err() != nil:
		if !sent {
			return fmt.Errorf("meta %s %s: %s (%w)", c.addr, method, st.Message(), meta.ErrUnreachable), false
		}
		return c.lostErr(method, context.DeadlineExceeded), false
	case st.Code() != codes.Unavailable:
		return c.ioErr(method, errors.New(st.Message())), false
	case sent:
		return c.lostErr(method, errors.New(st.Message())), false
	}
	return fmt.Errorf("meta %s %s: %s (%w)", c.addr, method, st.Message(), meta.ErrUnreachable), true
}

func (c *Client) ioErr(method string, err error) error {
	return fmt.Errorf("meta %s %s: %w (%w)", c.addr, method, err, meta.ErrIO)
}

// lostErr is the error of a call that was sent and got no reply: the
// service may have applied it (meta.ErrReplyLost).
func (c *Client) lostErr(method string, err error) error {
	return fmt.Errorf("meta %s %s: %w (%w)", c.addr, method, err, meta.ErrReplyLost)
}

var errClosed = errors.New("client closed")
