package authz

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// RegisterServer implements meta.API. A caller that may not administer
// (the blockd role) registers and heartbeats only the server its identity
// names: Server.ID must equal its certificate's name, so a block server
// cannot take another's place in the map. The registration of a server
// the map did not hold is logged with who made it.
func (v *view) RegisterServer(ctx context.Context, s meta.Server) (meta.ServerMap, error) {
	c, api, err := v.begin(ctx, "RegisterServer")
	if err != nil {
		return meta.ServerMap{}, err
	}
	if !c.id.Role.Can(auth.Administer) && s.ID != c.id.Name {
		return meta.ServerMap{}, v.a.deny(c.id, "RegisterServer",
			fmt.Errorf("%w: %s may register only the server named %q, not %s", auth.ErrDenied, c.id, c.id.Name, meta.Quote(s.ID)))
	}
	isNew := false
	if !v.a.known.has(s.ID) {
		m, err := v.a.svc.Servers(ctx)
		if err != nil {
			return meta.ServerMap{}, err
		}
		isNew = !slices.ContainsFunc(m.Servers, func(x meta.Server) bool { return x.ID == s.ID })
	}
	m, err := api.RegisterServer(ctx, s)
	if err != nil {
		if isNew {
			v.a.admin(ctx, c.id, "RegisterServer", err, "server", s.ID, "addr", s.Addr)
		}
		return m, err
	}
	if isNew {
		v.a.admin(ctx, c.id, "RegisterServer", nil, "server", s.ID, "addr", s.Addr)
	}
	v.a.known.set(s.ID)
	return m, nil
}

// SetServerState implements meta.API; it is logged with who asked.
func (v *view) SetServerState(ctx context.Context, id, state string) (meta.ServerMap, error) {
	c, api, err := v.begin(ctx, "SetServerState")
	if err != nil {
		return meta.ServerMap{}, err
	}
	m, err := api.SetServerState(ctx, id, state)
	v.a.admin(ctx, c.id, "SetServerState", err, "server", id, "state", state)
	if err == nil && state == meta.StateRemoved {
		v.a.known.forget(id) // registering it again is a new server
	}
	return m, err
}

// admin logs an administrative action: every one, not rate-limited (they
// are rare and each matters).
func (a *Authorizer) admin(ctx context.Context, id auth.Identity, method string, err error, args ...any) {
	args = append([]any{"who", id.String(), "via", id.Via, "method", method}, args...)
	if err != nil {
		a.log.Log(ctx, slog.LevelWarn, "admin action failed", append(args, "err", err.Error())...)
		return
	}
	a.log.Log(ctx, slog.LevelInfo, "admin action", args...)
}
