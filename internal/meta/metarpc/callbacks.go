package metarpc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The callback stream, client side. meta.API's Callbacks is a poll; the
// Client keeps one Callbacks stream per session and makes each poll one
// exchange on it: an Ack (what was applied, how long to wait) out, one batch
// back. The stream stays open between polls, so a poll costs no new call,
// and the server answers as soon as a callback is pending. A poll that
// fails or times out drops its stream (a late batch cannot be told from the
// next one); the next poll opens a new one, which the server starts from
// the poll's ack, so nothing unacknowledged is lost.

// streams are a connection's callback streams, by session.
type streams struct {
	mu sync.Mutex
	m  map[meta.SessionID]*cbStream
}

// cbStream is one session's stream; turn serializes its exchanges.
type cbStream struct {
	turn   chan struct{} // holds a token while an exchange runs
	st     pb.SessionsService_CallbacksClient
	cancel context.CancelFunc
}

func (s *streams) take(id meta.SessionID) *cbStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

func (s *streams) put(id meta.SessionID, cs *cbStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[meta.SessionID]*cbStream{}
	}
	s.m[id] = cs
}

// drop closes id's stream, if any.
func (s *streams) drop(id meta.SessionID) {
	s.mu.Lock()
	cs := s.m[id]
	delete(s.m, id)
	s.mu.Unlock()
	if cs != nil {
		cs.cancel()
	}
}

// dropThis closes cs if it is still id's stream.
func (s *streams) dropThis(id meta.SessionID, cs *cbStream) {
	s.mu.Lock()
	if s.m[id] == cs {
		delete(s.m, id)
	}
	s.mu.Unlock()
	cs.cancel()
}

func (s *streams) closeAll() {
	s.mu.Lock()
	m := s.m
	s.m = nil
	s.mu.Unlock()
	for _, cs := range m {
		cs.cancel()
	}
}

// open starts a stream for session id, reconnecting once when the
// connection was down.
func (c *Client) openStream(ctx context.Context, id meta.SessionID) (*cbStream, error) {
	for attempt := 0; ; attempt++ {
		sctx, cancel := context.WithCancel(context.Background())
		var sent atomic.Bool
		st, err := c.mc.Callbacks(context.WithValue(c.outgoing(sctx, id), sentKey{}, &sent))
		if err == nil {
			cs := &cbStream{turn: make(chan struct{}, 1), st: st, cancel: cancel}
			c.streams.put(id, cs)
			return cs, nil
		}
		cancel()
		cerr, unsent := c.classify(ctx, "Callbacks", err, sent.Load(), nil)
		if !unsent || attempt > 0 {
			return nil, cerr
		}
		if err := c.reconnect(ctx); err != nil {
			return nil, err
		}
	}
}

// Callbacks implements meta.API over the session's stream. Without a
// deadline in ctx the poll waits wait plus DefaultCallTimeout at most.
func (c *Client) Callbacks(ctx context.Context, id meta.SessionID, ack uint64, wait time.Duration) ([]meta.Callback, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait+DefaultCallTimeout)
		defer cancel()
	}
	const method = "Callbacks"
	if c.closed.Load() {
		return nil, c.ioErr(method, errClosed)
	}
	cs := c.streams.take(id)
	if cs == nil {
		var err error
		if cs, err = c.openStream(ctx, id); err != nil {
			return nil, err
		}
	}
	select {
	case cs.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, c.ioErr(method, ctx.Err())
	}
	defer func() { <-cs.turn }()

	type result struct {
		b   *pb.CallbackBatch
		err error
	}
	done := make(chan result, 1)
	go func() {
		if err := cs.st.Send(&pb.Ack{Seq: ack, Wait: int64(wait)}); err != nil {
			// The stream ended; Recv returns why.
			_, err = cs.st.Recv()
			done <- result{nil, err}
			return
		}
		b, err := cs.st.Recv()
		done <- result{b, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		c.streams.dropThis(id, cs)
		<-done
		if ctx.Err() == context.DeadlineExceeded {
			return nil, c.lostErr(method, ctx.Err())
		}
		return nil, c.ioErr(method, ctx.Err())
	}
	if r.err != nil {
		c.streams.dropThis(id, cs)
		hdr, _ := cs.st.Header()
		err, _ := c.classify(ctx, method, r.err, true, hdr)
		return nil, err
	}
	if hdr, err := cs.st.Header(); err == nil {
		if err := versionMismatch(hdr, c.protocol); err != nil {
			c.streams.dropThis(id, cs)
			return nil, c.ioErr(method, err)
		}
	}
	cbs, err := callbacksIn(r.b)
	if err != nil {
		c.streams.dropThis(id, cs)
		return nil, c.ioErr(method, err)
	}
	return cbs, nil
}
