package metarpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// ProtocolVersion is the version of the meta protocol this package speaks
// (docs/protocol.md). Every call carries it in the metadata mdProtocol; the
// server refuses a call of another version, and the client refuses a server
// that answers with another one. Version 2 split version 1's one Meta
// service into one service per concern (services.go), with the same
// messages.
const ProtocolVersion = 2

// Metadata keys of the protocol.
const (
	mdProtocol = "tessera-protocol"
	mdSession  = "tessera-session"
	// mdRead "serializable" marks a call whose reads may be serializable
	// (meta.AllowSerializable); absent: linearizable.
	mdRead = "tessera-read"
	mdAuth = "authorization"
)

// readSerializable is mdRead's one value.
const readSerializable = "serializable"

// gate is the server's interceptor: it checks the protocol version,
// authenticates the caller and puts its identity (auth.NewContext) and
// session in the call's context before any handler runs. Authorization is
// not its business: the API it serves decides what the identity may do.
type gate struct {
	opts ServeOptions
}

type sessionKey struct{}

// admit returns the context the call runs with, or the status refusing it.
func (g *gate) admit(ctx context.Context, method string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	grpc.SetHeader(ctx, metadata.Pairs(mdProtocol, strconv.Itoa(g.opts.protocol)))
	if err := g.checkVersion(md); err != nil {
		return nil, g.refuse(ctx, method, err)
	}
	id, err := g.identify(ctx, md)
	if err != nil {
		return nil, g.refuse(ctx, method, err)
	}
	ctx = auth.NewContext(ctx, id)
	if v := first(md, mdSession); v != "" {
		sid, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, g.refuse(ctx, method, status.Errorf(codes.InvalidArgument, "metadata %s: %s is no session id", mdSession, meta.Quote(v)))
		}
		ctx = context.WithValue(ctx, sessionKey{}, meta.SessionID(sid))
	}
	switch v := first(md, mdRead); v {
	case "":
	case readSerializable:
		ctx = meta.AllowSerializable(ctx)
	default:
		return nil, g.refuse(ctx, method, status.Errorf(codes.InvalidArgument, "metadata %s: %s (want %q or none)", mdRead, meta.Quote(v), readSerializable))
	}
	return ctx, nil
}

// unknown answers a call of a service or method this server does not
// serve (grpc.UnknownServiceHandler: no interceptor runs for it). A peer of
// another protocol version — a version 1 client calling the one Meta
// service it had — is told so as the version check tells it; a peer of
// this version gets Unimplemented naming the method, quoted and bounded.
func (g *gate) unknown(_ any, ss grpc.ServerStream) error {
	ctx := ss.Context()
	method, _ := grpc.MethodFromServerStream(ss)
	md, _ := metadata.FromIncomingContext(ctx)
	ss.SetHeader(metadata.Pairs(mdProtocol, strconv.Itoa(g.opts.protocol)))
	if err := g.checkVersion(md); err != nil {
		return g.refuse(ctx, meta.Quote(method), err)
	}
	return status.Errorf(codes.Unimplemented, "this server has no method %s", meta.Quote(method))
}

func (g *gate) checkVersion(md metadata.MD) error {
	v := first(md, mdProtocol)
	if v == "" {
		return status.Errorf(codes.FailedPrecondition, "client speaks no tessera meta protocol (no %s metadata), server %d", mdProtocol, g.opts.protocol)
	}
	if n, err := strconv.Atoi(v); err != nil || n != g.opts.protocol {
		return status.Errorf(codes.FailedPrecondition, "client speaks protocol %s, server %d", v, g.opts.protocol)
	}
	return nil
}

// identify authenticates the caller: anyone is auth.Insecure on a plain
// port; on a TLS port the verified certificate, else a bearer token.
func (g *gate) identify(ctx context.Context, md metadata.MD) (auth.Identity, error) {
	if g.opts.Creds == nil {
		return auth.Insecure, nil
	}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			if id, err := auth.PeerIdentity(&ti.State); err == nil {
				id.Via = "cert"
				return id, nil
			} else if !errors.Is(err, auth.ErrUnauthenticated) {
				return auth.Identity{}, status.Errorf(codes.Unauthenticated, "client certificate: %v", err)
			}
		}
	}
	h := first(md, mdAuth)
	if h == "" {
		return auth.Identity{}, status.Error(codes.Unauthenticated, "no client certificate and no bearer token (authorization metadata)")
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return auth.Identity{}, status.Error(codes.Unauthenticated, "authorization metadata is not \"Bearer TOKEN\"")
	}
	if g.opts.Tokens == nil {
		return auth.Identity{}, status.Error(codes.Unauthenticated, "no client certificate, and this server accepts no tokens")
	}
	id, err := g.opts.Tokens.Verify(tok)
	if err != nil {
		return auth.Identity{}, status.Errorf(codes.Unauthenticated, "bearer token: %v", err)
	}
	id.Via = "token"
	return id, nil
}

// refuse logs a refused call with its peer and why, and returns err.
func (g *gate) refuse(ctx context.Context, method string, err error) error {
	addr := "unknown"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		addr = p.Addr.String()
	}
	g.opts.Logger.Warn("meta rpc refused a call", "peer", addr, "method", method, "why", status.Convert(err).Message())
	return err
}

func (g *gate) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := g.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if err := checkWireFields(req); err != nil {
		return nil, statusOf(err)
	}
	resp, err := h(ctx, req)
	if status.Code(err) == codes.PermissionDenied {
		g.refuse(ctx, info.FullMethod, err)
	}
	return resp, err
}

func (g *gate) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := g.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return h(srv, &ctxStream{ServerStream: ss, ctx: ctx})
}

// ctxStream is a ServerStream with the context admit made.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// sessionOf returns the session a call was made for; 0: none.
func sessionOf(ctx context.Context) meta.SessionID {
	id, _ := ctx.Value(sessionKey{}).(meta.SessionID)
	return id
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// versionMismatch is the client's check of the server's answer.
func versionMismatch(header metadata.MD, want int) error {
	v := first(header, mdProtocol)
	if v == "" || v == strconv.Itoa(want) {
		return nil
	}
	return fmt.Errorf("client speaks protocol %d, server %s", want, v)
}
