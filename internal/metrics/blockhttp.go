package metrics

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	blockserver "tessera/internal/block/server"
)

// BlockRequests are a block server's series of its HTTP requests.
type BlockRequests struct {
	reqs *prometheus.CounterVec   // route, code
	errs *prometheus.CounterVec   // class
	secs *prometheus.HistogramVec // route
	in   prometheus.Counter
	out  prometheus.Counter
}

// NewBlockRequests registers a block server's HTTP series with reg (wrap
// reg with the server's id: BlockServer does).
func NewBlockRequests(reg prometheus.Registerer) *BlockRequests {
	m := &BlockRequests{
		reqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_blockd_requests_total",
			Help: "Block server HTTP requests by route (the route table's pattern) and status class (2xx, 4xx, 5xx); 5xx are the server's errors.",
		}, []string{"route", "code"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_blockd_errors_total",
			Help: "Block server error replies by class (the Tessera-Error header: not-found, corrupt, hash-mismatch, no-space, too-large, bad-request, internal, ...).",
		}, []string{"class"}),
		secs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tessera_blockd_request_duration_seconds",
			Help: "Block server HTTP request latency by route, until the handler returned (the body sent).",
			// 50 µs (a HEAD) to 50 s (a 64 MiB block over a slow link).
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 11),
		}, []string{"route"}),
		in: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tessera_blockd_received_bytes_total",
			Help: "Request body bytes the block server read (blocks stored, hash lists).",
		}),
		out: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tessera_blockd_sent_bytes_total",
			Help: "Response body bytes the block server sent (blocks served, listings).",
		}),
	}
	reg.MustRegister(m.reqs, m.errs, m.secs, m.in, m.out)
	return m
}

// BlockHTTP returns next counting its requests in m. The route label is
// the pattern of the http.ServeMux inside next that matched (Request.Pattern,
// set on the request the mux is handed), "unmatched" when none did, so its
// values are the route table's.
func BlockHTTP(next http.Handler, m *BlockRequests) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		cw := &countingWriter{ResponseWriter: w, code: http.StatusOK}
		if r.Body != nil && r.Body != http.NoBody {
			cb := &countingBody{ReadCloser: r.Body}
			r.Body = cb
			defer func() { m.in.Add(float64(cb.n)) }()
		}
		next.ServeHTTP(cw, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.reqs.WithLabelValues(route, strconv.Itoa(cw.code/100)+"xx").Inc()
		if class := cw.Header().Get(blockserver.ErrorHeader); class != "" {
			m.errs.WithLabelValues(errorClass(class)).Inc()
		}
		m.secs.WithLabelValues(route).Observe(time.Since(start).Seconds())
		m.out.Add(float64(cw.n))
	})
}

// errorClass bounds an error class label: the server's classes are short
// constants (blockserver.Class*); anything else is "other".
func errorClass(c string) string {
	if len(c) > 32 || strings.IndexFunc(c, func(r rune) bool { return (r < 'a' || r > 'z') && r != '-' }) >= 0 {
		return "other"
	}
	return c
}

// countingBody counts what a handler reads of a request body.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// countingWriter counts a response's bytes and keeps its status. It
// forwards ReadFrom, so that a block served from its file still goes out
// with sendfile, and Unwrap for http.ResponseController.
type countingWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	n     int64
}

func (w *countingWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	w.wrote = true
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
	}
	w.n += n
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
