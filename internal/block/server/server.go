package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/scrub"
	"tessera/internal/block/tlsconn"
	"tessera/internal/clock"
	"tessera/internal/ratelog"
)

// DefaultMaxBlockSize is the largest block a server accepts unless
// Options.MaxBlockSize says otherwise.
const DefaultMaxBlockSize = 64 << 20

// MaxHasBatch is the largest number of hashes one POST /v1/has may ask about.
const MaxHasBatch = 1 << 16

// MaxRemoveBatch is the largest number of records one POST /v1/remove may
// carry: 160 KiB of body, and at a few milliseconds per removal on a busy
// disk well within the reply's minute.
const MaxRemoveBatch = 4096

// RemoveRecordSize is the size of one record of POST /v1/remove: a hash and
// its older-than (int64 unix ns, big endian).
const RemoveRecordSize = block.HashSize + 8

// ErrorHeader is the reply header that names the class of an error reply.
const ErrorHeader = "Tessera-Error"

// Error classes sent in ErrorHeader.
const (
	ClassNotFound     = "not-found"
	ClassCorrupt      = "corrupt"
	ClassHashMismatch = "hash-mismatch"
	ClassNoSpace      = "no-space"
	ClassTooLarge     = "too-large"
	ClassBadRequest   = "bad-request"
	ClassInternal     = "internal"
	ClassBusy         = "busy"
)

// Trailers of GET /v1/list.
const (
	ListCountTrailer = "Tessera-List-Count"
	ListErrorTrailer = "Tessera-List-Error"
)

// ListRecordSize is the size of one record of GET /v1/list.
const ListRecordSize = block.HashSize + 8 + 8

// Backend is what the server exposes. Put must not keep the data slice after
// it returns.
type Backend interface {
	block.Store
	block.Lister
}

// Files is the optional capability of a Backend whose blocks are local files
// (disk.Store). With it, GET sends the file with sendfile and HEAD answers
// from the file's metadata; without it, GET falls back to Get and HEAD to Has.
type Files interface {
	// OpenBlock opens the block's file, verified first if verify is set.
	OpenBlock(ctx context.Context, h block.Hash, verify bool) (*os.File, block.Info, error)
	// Stat returns the block's Info or an error wrapping block.ErrNotFound.
	Stat(ctx context.Context, h block.Hash) (block.Info, error)
	// Path returns the name of the block's file, for logs.
	Path(h block.Hash) string
}

// Creator is the optional capability of telling a new block from one that
// was already present, for 201 versus 204. Without it PUT answers 201.
type Creator interface {
	PutCreated(ctx context.Context, h block.Hash, data []byte) (created bool, err error)
}

// Options configure a Handler. The zero value is usable.
type Options struct {
	// MaxBlockSize bounds PUT bodies; 0 means DefaultMaxBlockSize.
	MaxBlockSize int64
	// Logger receives server errors and corruption reports; nil discards.
	Logger *slog.Logger
	// Clock measures the pace of request bodies (package lowat); nil is
	// the real clock.
	Clock clock.Clock
	// Scrub, if set, reports the store's scrub (GET /v1/scrub); without
	// it that route answers 404.
	Scrub func() scrub.Progress
	// Creds, if set, are the server's certificate and CA: every request
	// must then come with a verified client certificate or a bearer
	// token (Tokens; Creds.Tokens() when nil), and Listener serves TLS.
	// Without them every caller is auth.Insecure (--insecure).
	Creds  *auth.Credentials
	Tokens auth.TokenVerifier
	// RefusalLogEvery is the least time between two log lines about
	// refused requests (ratelog.DefaultEvery when 0); the ones held back
	// are counted in the next.
	RefusalLogEvery time.Duration
	// Limits bound request bodies and the memory they take (limits.go);
	// zero fields take DefaultLimits.
	Limits Limits
}

// Handler serves the block protocol (see the package doc) for one Backend.
type Handler struct {
	b       Backend
	files   Files   // nil if b has no files
	creator Creator // nil if b cannot tell
	max     int64
	log     *slog.Logger
	clock   clock.Clock
	scrub   func() scrub.Progress
	mux     *http.ServeMux
	bufs    bufPool
	// noSpace: a full disk refuses every PUT; one log line per interval
	// says so (with how many were refused meanwhile).
	noSpace ratelog.Limiter
	creds   *auth.Credentials // nil: insecure
	tokens  auth.TokenVerifier
	refused ratelog.Limiter // refused requests, one line per interval
	lim     Limits
	budget  *budget
	rel     *releaser
	busy    ratelog.Limiter // requests refused for the in-flight budget
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler serving b.
func New(b Backend, opts Options) *Handler {
	h := &Handler{b: b, max: opts.MaxBlockSize, log: opts.Logger, clock: clock.Or(opts.Clock), scrub: opts.Scrub}
	if h.max <= 0 {
		h.max = DefaultMaxBlockSize
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.initLimits(opts.Limits)
	h.files, _ = b.(Files)
	h.creator, _ = b.(Creator)
	h.creds, h.tokens = opts.Creds, opts.Tokens
	h.refused.Every = opts.RefusalLogEvery
	if h.creds != nil && h.tokens == nil {
		h.tokens = h.creds.Tokens()
	}
	h.mux = http.NewServeMux()
	for _, rt := range routes { // GET routes also answer HEAD
		h.mux.Handle(rt.Method+" "+rt.Pattern, h.route(rt))
	}
	return h
}

// Close stops the handler's pending work (a memory release after a
// burst). Requests still served finish normally.
func (h *Handler) Close() { h.rel.close() }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// NewHTTPServer returns an http.Server for handler with the timeouts a block
// server wants (DefaultLimits; Limits.ConfigureServer sets others): bounded
// header reads, replies and idle connections. Bodies get deadlines from the
// handler (paceReader). Serve it on a LimitListener to cap connections.
func NewHTTPServer(addr string, handler http.Handler, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		Addr:        addr,
		Handler:     handler,
		ConnContext: connContext,
		ErrorLog:    slog.NewLogLogger(handshakeLog{log.Handler(), new(ratelog.Limiter)}, slog.LevelWarn),
	}
	DefaultLimits().ConfigureServer(srv)
	return srv
}

func (h *Handler) parseName(w http.ResponseWriter, r *http.Request) (block.Hash, bool) {
	x := r.PathValue("hex")
	hash, err := block.ParseHash(x)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, ClassBadRequest, err)
		return hash, false
	}
	return hash, true
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request) {
	hash, ok := h.parseName(w, r)
	if !ok {
		return
	}
	if r.ContentLength > h.max {
		h.fail(w, r, http.StatusRequestEntityTooLarge, ClassTooLarge,
			fmt.Errorf("block %s of %d bytes exceeds the maximum block size of %d bytes", hash, r.ContentLength, h.max))
		return
	}
	n := r.ContentLength
	if n < 0 {
		n = h.max
	}
	// The bytes are reserved before the buffer is allocated: a peer that
	// only announces a large body gets no memory for it beyond the budget.
	release, err := h.reserve(r, n)
	if err != nil {
		h.failErr(w, r, fmt.Errorf("put block %s: %w", hash, err))
		return
	}
	defer release()
	body := newPaceReader(w, r.Body, h.lim, n)
	data, pooled, err := h.readBody(r, body)
	body.done()
	h.replyDeadline(w) // the block is made durable before the reply
	if pooled {
		defer h.bufs.put(data)
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.fail(w, r, http.StatusRequestEntityTooLarge, ClassTooLarge,
				fmt.Errorf("block %s exceeds the maximum block size of %d bytes", hash, h.max))
			return
		}
		h.fail(w, r, http.StatusBadRequest, ClassBadRequest, fmt.Errorf("put block %s: read body: %w", hash, err))
		return
	}
	created := true
	if h.creator != nil {
		created, err = h.creator.PutCreated(r.Context(), hash, data)
	} else {
		err = h.b.Put(r.Context(), hash, data)
	}
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	if created {
		w.WriteHeader(http.StatusCreated)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
}

// readBody reads a PUT body of at most h.max bytes. If pooled, data goes
// back to the pool once it is no longer used.
func (h *Handler) readBody(r *http.Request, body io.Reader) (data []byte, pooled bool, err error) {
	if r.ContentLength >= 0 {
		data = h.bufs.get(int(r.ContentLength))
		_, err = readFull(h.clock, r, body, data)
		return data, true, err
	}
	// Chunked: rare, not pooled.
	data, err = io.ReadAll(io.LimitReader(body, h.max+1))
	if err == nil && int64(len(data)) > h.max {
		err = &http.MaxBytesError{Limit: h.max}
	}
	return data, false, err
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	hash, ok := h.parseName(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodHead {
		h.head(w, r, hash)
		return
	}
	// A range cannot be verified, so only whole-block reads are.
	verify := r.Header.Get("Range") == ""
	if h.files == nil {
		data, err := h.b.Get(r.Context(), hash)
		if err != nil {
			h.failErr(w, r, err)
			return
		}
		setBlockHeaders(w, hash)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
		return
	}
	if verify && r.TLS != nil {
		// No sendfile through TLS: read the block once, hash it and send
		// it from memory.
		h.getVerified(w, r, hash)
		return
	}
	h.getStream(w, r, hash, verify)
}

// getStream serves a GET from the block's file, with sendfile on plain
// HTTP; with verify the file is hashed first.
func (h *Handler) getStream(w http.ResponseWriter, r *http.Request, hash block.Hash, verify bool) {
	f, info, err := h.files.OpenBlock(r.Context(), hash, verify)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	defer f.Close()
	_ = http.NewResponseController(w).SetWriteDeadline(h.lim.bodyDeadline(time.Now(), info.Size))
	setBlockHeaders(w, hash)
	// On TLS, ServeContent's 32 KiB pieces are gathered (tlsconn.Cork).
	uncork := tlsconn.Cork(connOf(r))
	defer uncork()
	// ServeContent copies an *os.File with sendfile (plain HTTP).
	http.ServeContent(w, r, "", time.Unix(0, info.ModTime), f)
}

func (h *Handler) head(w http.ResponseWriter, r *http.Request, hash block.Hash) {
	if h.files == nil {
		has, err := h.b.Has(r.Context(), []block.Hash{hash})
		if err != nil {
			h.failErr(w, r, err)
			return
		}
		if !has[0] {
			h.failErr(w, r, fmt.Errorf("block %s: %w", hash, block.ErrNotFound))
			return
		}
		setBlockHeaders(w, hash)
		return
	}
	info, err := h.files.Stat(r.Context(), hash)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	setBlockHeaders(w, hash)
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.Header().Set("Last-Modified", time.Unix(0, info.ModTime).UTC().Format(http.TimeFormat))
}

func setBlockHeaders(w http.ResponseWriter, hash block.Hash) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+hash.String()+`"`)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// failErr answers with the status of err's class.
func (h *Handler) failErr(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, block.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, ClassNotFound, err)
	case errors.Is(err, block.ErrCorrupt):
		attrs := []any{"block", r.PathValue("hex"), "err", err}
		if h.files != nil {
			if hash, perr := block.ParseHash(r.PathValue("hex")); perr == nil {
				attrs = append(attrs, "file", h.files.Path(hash))
			}
		}
		h.log.Error("corrupt block", attrs...)
		h.fail(w, r, http.StatusInternalServerError, ClassCorrupt, err)
	case errors.Is(err, block.ErrHashMismatch):
		h.fail(w, r, http.StatusUnprocessableEntity, ClassHashMismatch, err)
	case errors.Is(err, block.ErrNoSpace):
		h.fail(w, r, http.StatusInsufficientStorage, ClassNoSpace, err)
	case errors.Is(err, errBusy):
		h.busy.Log(h.log, slog.LevelWarn, "block server refusing request: in-flight bytes", "method", r.Method, "path", r.URL.Path, "peer", peerOf(r.RemoteAddr), "err", err)
		w.Header().Set("Retry-After", "1")
		h.fail(w, r, http.StatusServiceUnavailable, ClassBusy, err)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the reply.
		h.fail(w, r, http.StatusServiceUnavailable, ClassInternal, err)
	default:
		h.fail(w, r, http.StatusInternalServerError, ClassInternal, err)
	}
}

// fail writes a plain-text error reply, logging server errors.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, code int, class string, err error) {
	if class == ClassNoSpace && r.Context().Err() == nil {
		h.noSpace.Log(h.log, slog.LevelError, "block store out of space: refusing writes", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if code >= 500 && class != ClassCorrupt && r.Context().Err() == nil {
		h.log.Error("block request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	}
	h.replyDeadline(w)
	hd := w.Header()
	if r.ContentLength != 0 {
		// What is left of the body is not worth reading: net/http would
		// read up to 256 KiB of it, with no deadline, to reuse the
		// connection.
		hd.Set("Connection", "close")
	}
	hd.Del("Content-Length")
	hd.Del("ETag")
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set(ErrorHeader, class)
	w.WriteHeader(code)
	fmt.Fprintln(w, err)
}
