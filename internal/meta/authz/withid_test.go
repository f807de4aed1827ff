package authz_test

import (
	"context"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// withID makes every call of api with id in its context, as the meta
// role's transport does for an authenticated caller; it lets suites written
// against meta.API (metatest) run through the decorator. Its meta.API
// methods are generated (zz_withid_gen_test.go).
type withID struct {
	api meta.API
	id  auth.Identity
}

//go:generate go run tessera/internal/meta/wrapgen -type withID -recv w -ifaces api -o zz_withid_gen_test.go

func (w withID) ctx(ctx context.Context) context.Context { return auth.NewContext(ctx, w.id) }

// around makes a call with w's identity in its context.
func (w withID) around(ctx context.Context, _ string, call func(context.Context, meta.API) error) error {
	return call(w.ctx(ctx), w.api)
}

// WithSession implements meta.SessionBinder.
func (w withID) WithSession(sid meta.SessionID) meta.API {
	return withID{api: w.api.(meta.SessionBinder).WithSession(sid), id: w.id}
}

var _ meta.SessionBinder = withID{}
