package statuspage

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"tessera/internal/admin"
	"tessera/internal/clock"
)

// Config is what the page is built from.
type Config struct {
	// Cluster is the meta service and the way to reach its block servers
	// (the meta role's own; Progress is not used).
	Cluster *admin.Cluster
	// Errors is the ring the meta role's logger feeds (Tee); nil shows
	// none.
	Errors *Ring
	// Refresh is how often the page reloads itself [DefaultRefresh];
	// negative: never.
	Refresh time.Duration
	// Timeout bounds the gathering of one snapshot [DefaultTimeout].
	Timeout time.Duration
	// Clock dates the snapshots and the throughput samples (clock.Real
	// when nil).
	Clock clock.Clock
	// Logger receives the failures to write a response (nil: none).
	Logger *slog.Logger
}

// DefaultRefresh and DefaultTimeout are Config's defaults.
const (
	DefaultRefresh = 5 * time.Second
	DefaultTimeout = 10 * time.Second
)

// Handler serves the page and its JSON; it is safe for concurrent use.
type Handler struct {
	cfg     Config
	clk     clock.Clock
	samples sampler
}

var _ http.Handler = (*Handler)(nil)

// New returns the handler of cfg.
func New(cfg Config) *Handler {
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg, clk: clock.Or(cfg.Clock)}
}

// Snapshot gathers what the page shows now.
func (h *Handler) Snapshot(ctx context.Context) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	now := h.clk.Now()
	s, smp := gather(ctx, h.cfg.Cluster, now)
	if s.Error == "" {
		s.Throughput = h.samples.add(smp)
	} else {
		s.Throughput = Throughput{Reads: readNote}
	}
	s.Errors, s.ErrorsTotal = h.cfg.Errors.Recent()
	if s.Errors == nil {
		s.Errors = []Record{}
	}
	s.Refused = h.cfg.Errors.Refused()
	if s.Refused == nil {
		s.Refused = []Refusals{}
	}
	return s
}

// ServeHTTP serves GET / (HTML) and GET /status.json.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" && r.URL.Path != "/status.json" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s := h.Snapshot(r.Context())
	code := http.StatusOK
	if s.Error != "" {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	var err error
	if r.URL.Path == "/status.json" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(s)
	} else {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		err = pageTemplate.Execute(w, pageData{Snapshot: s, Refresh: int(h.cfg.Refresh.Round(time.Second) / time.Second)})
	}
	if err != nil && r.Context().Err() == nil {
		h.cfg.Logger.Debug("status page: writing the response", "path", r.URL.Path, "err", err)
	}
}

// pageData is what the template sees.
type pageData struct {
	Snapshot
	Refresh int // seconds; <= 0: no reload
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"bytes": bytesOf,
	"deref": func(p *int64) int64 { return *p },
	"rate":  func(v float64) string { return signed(v) + "/s" },
	"seconds": func(v float64) string {
		return time.Duration(v * float64(time.Second)).Round(100 * time.Millisecond).String()
	},
	"clock": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(pageHTML))

// bytesOf is humanBytes of any integer the snapshot holds.
func bytesOf(v any) string {
	switch n := v.(type) {
	case int64:
		return humanBytes(n)
	case uint64:
		return humanBytes(int64(min(n, 1<<63-1)))
	case int:
		return humanBytes(int64(n))
	}
	return fmt.Sprint(v)
}

// humanBytes writes n bytes with a binary unit ("1.5 MiB").
func humanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for (v >= 1024 || v <= -1024) && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}

// signed is humanBytes of a rate, with its sign.
func signed(v float64) string {
	s := humanBytes(int64(v))
	if v > 0 {
		return "+" + s
	}
	return s
}
