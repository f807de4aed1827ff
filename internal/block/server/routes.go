package server

import (
	"net/http"

	"tessera/internal/auth"
)

// Route is one route of the block protocol and the permission a caller
// needs for it (package doc, Authorization).
type Route struct {
	Method  string // GET routes also answer HEAD
	Pattern string // as net/http's ServeMux takes it
	// Permission is what the caller's role must hold (auth.Role.Can).
	Permission auth.Permission

	serve func(*Handler, http.ResponseWriter, *http.Request)
}

// routes is the one table of the protocol: New builds the mux from it, and
// tests enumerate it so that a route added here cannot go unguarded.
var routes = []Route{
	{"PUT", "/v1/blocks/{hex}", auth.WriteBlocks, (*Handler).put},
	{"GET", "/v1/blocks/{hex}", auth.ReadBlocks, (*Handler).get},
	{"DELETE", "/v1/blocks/{hex}", auth.ManageBlocks, (*Handler).remove},
	{"POST", "/v1/remove", auth.ManageBlocks, (*Handler).removeMany},
	{"POST", "/v1/has", auth.ReadBlocks, (*Handler).has},
	{"GET", "/v1/list", auth.ManageBlocks, (*Handler).list},
	{"GET", "/v1/usage", auth.ManageBlocks, (*Handler).usage},
	{"GET", "/v1/space", auth.ReadBlocks, (*Handler).space},
	{"POST", "/v1/check/{hex}", auth.ManageBlocks, (*Handler).check},
	{"GET", "/v1/scrub", auth.ManageBlocks, (*Handler).scrubProgress},
}

// Routes returns the protocol's routes and their permissions.
func Routes() []Route {
	out := make([]Route, len(routes))
	copy(out, routes)
	for i := range out {
		out[i].serve = nil
	}
	return out
}

// route builds the mux's handler of rt: authenticate, authorize, serve.
func (h *Handler) route(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := h.authorize(w, r, rt.Permission)
		if !ok {
			return
		}
		rt.serve(h, w, r.WithContext(auth.NewContext(r.Context(), id)))
	})
}
