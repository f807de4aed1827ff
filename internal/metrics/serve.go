package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry for one role process, holding the Go
// runtime's and the process's standard series (go_*, process_*) already.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Server is the HTTP listener of `--metrics HOST:PORT`: /metrics serves the
// registry in the Prometheus exposition formats; other paths are the
// caller's (Mux.Handle("/", ...) for a status page) and 404 until then.
type Server struct {
	// Addr is where the listener listens (the port chosen when the
	// address asked for port 0).
	Addr string
	// Mux routes the listener's requests; /metrics is taken. It is safe
	// to add handlers while it serves.
	Mux *http.ServeMux

	srv    *http.Server
	served chan error
}

// Listen serves reg at http://addr/metrics until Close. An address that
// cannot be listened on is an error naming it.
func Listen(addr string, reg *prometheus.Registry, log *slog.Logger) (*Server, error) {
	if reg == nil {
		return nil, errors.New("metrics: no registry")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	s := &Server{Addr: ln.Addr().String(), Mux: http.NewServeMux(), served: make(chan error, 1)}
	s.Mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A collector that fails (the meta service's store closing) costs
		// its own series, not the scrape.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slogPrinter{log},
		Registry:      reg, // promhttp_metric_handler_* series
	}))
	s.srv = &http.Server{
		Handler:           s.Mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	go func() { s.served <- s.srv.Serve(ln) }()
	log.Info("metrics", "listen", s.Addr, "path", "/metrics")
	return s, nil
}

// Close stops the listener, letting scrapes under way finish (bounded).
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// slogPrinter lets promhttp log through slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics: " + fmt.Sprint(v...)) }
