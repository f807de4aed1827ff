package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/metrics"
)

// addMetricsFlag adds --metrics HOST:PORT to a role's flags. Off by default
// (docs/design/2026-11-24-metrics.md): a fixed default port would collide
// between the roles and block servers of one machine.
func addMetricsFlag(fs *flag.FlagSet) *string {
	return fs.String("metrics", "", "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9400; port 0 picks one, printed in the ready line as metrics=ADDR); default off")
}

// metricsFlag is a role's --metrics: the registry its parts register with
// and the listener serving it, both nil when the flag is not given.
type metricsFlag struct {
	reg *prometheus.Registry
	srv *metrics.Server
}

// startMetrics checks addr and serves a new registry there; "" does
// nothing. Close the result when the role ends.
func startMetrics(addr string, log *slog.Logger) (metricsFlag, error) {
	if addr == "" {
		return metricsFlag{}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return metricsFlag{}, fmt.Errorf("%w: --metrics %q: want HOST:PORT (%v)", errUsage, addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		log.Info("metrics served beyond this machine, without TLS: they count operations and bytes, they hold no file names or content", "metrics", addr)
	}
	reg := metrics.NewRegistry()
	srv, err := metrics.Listen(addr, reg, log)
	if err != nil {
		return metricsFlag{}, err
	}
	return metricsFlag{reg: reg, srv: srv}, nil
}

// ready is the ready line's metrics=ADDR field ("" when off).
func (m metricsFlag) ready() string {
	if m.srv == nil {
		return ""
	}
	return " metrics=" + m.srv.Addr
}

// mux is the listener's router for the status page (nil when off).
func (m metricsFlag) mux() *http.ServeMux {
	if m.srv == nil {
		return nil
	}
	return m.srv.Mux
}

// Close stops the listener.
func (m metricsFlag) Close() error { return m.srv.Close() }
