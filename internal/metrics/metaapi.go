package metrics

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// MetaCalls are the series of one side of the meta API: the service's
// (Side "meta": every call it serves, whoever makes it) or a mount's
// (Side "client": every call it makes, each retry counted).
type MetaCalls struct {
	calls *prometheus.CounterVec   // op, result
	secs  *prometheus.HistogramVec // op
}

// Sides of MetaCalls: the series are tessera_meta_requests_total and
// tessera_meta_request_duration_seconds, or tessera_client_meta_...
const (
	SideMeta   = "meta"
	SideClient = "client_meta"
)

// NewMetaCalls registers the series of side with reg.
func NewMetaCalls(reg prometheus.Registerer, side string) *MetaCalls {
	m := &MetaCalls{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tessera", Subsystem: side, Name: "requests_total",
			Help: "Meta API calls by operation and result (ok, conflict, not_found, exists, unavailable, canceled, session_expired, denied, unauthenticated, errno, error).",
		}, []string{"op", "result"}),
		secs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tessera", Subsystem: side, Name: "request_duration_seconds",
			Help: "Meta API call latency by operation (callbacks is a long poll: its time is mostly waiting).",
			// 50 µs (an in-process lookup) to 10 s (a commit waiting for
			// callbacks to be acknowledged).
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10),
		}, []string{"op"}),
	}
	reg.MustRegister(m.calls, m.secs)
	return m
}

// done records a call of op that started at start and ended with *err
// (deferred: it reads the named result after the call).
func (m *MetaCalls) done(op string, start time.Time, err *error) {
	m.calls.WithLabelValues(op, resultOf(*err)).Inc()
	m.secs.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

// resultOf classes an error into a bounded label value.
func resultOf(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, meta.ErrConflict):
		return "conflict"
	case meta.Unavailable(err):
		return "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, auth.ErrUnauthenticated):
		return "unauthenticated"
	case errors.Is(err, auth.ErrDenied):
		return "denied"
	case errors.Is(err, meta.ErrSessionExpired):
		return "session_expired"
	case errors.Is(err, meta.ErrNotFound):
		return "not_found"
	case errors.Is(err, meta.ErrExist):
		return "exists"
	case errors.As(err, &errno):
		return "errno"
	}
	return "error"
}

// MetaAPI returns api counting and timing every call in m. The result
// implements every optional meta interface (meta.OptionalInterfaces),
// passing each call on to api, counted, when api has the capability and
// answering meta.ErrNotSupported when not (meta.Forward); bound copies
// (meta.SessionBinder) count in m too.
func MetaAPI(api meta.API, m *MetaCalls) meta.API {
	return &metaAPI{api: api, m: m}
}

// metaAPI is the decorator. Its meta methods are generated
// (zz_metaapi_gen.go): each is one call of around under its op name, the
// method's name in lower case for meta.FS ("getattr") and in snake case
// for the others ("set_server_state").
type metaAPI struct {
	api meta.API
	m   *MetaCalls
}

//go:generate go run tessera/internal/meta/wrapgen -type *metaAPI -recv a -ifaces api,optional -lower FS -o zz_metaapi_gen.go

var _ meta.SessionBinder = (*metaAPI)(nil)

// around makes one call on the wrapped API and records it under op.
func (a *metaAPI) around(ctx context.Context, op string, call func(context.Context, meta.API) error) (err error) {
	defer a.m.done(op, time.Now(), &err)
	return call(ctx, a.api)
}

// WithSession implements meta.SessionBinder when the wrapped API does
// (else it returns a itself).
func (a *metaAPI) WithSession(id meta.SessionID) meta.API {
	b, ok := a.api.(meta.SessionBinder)
	if !ok {
		return a
	}
	return MetaAPI(b.WithSession(id), a.m)
}
