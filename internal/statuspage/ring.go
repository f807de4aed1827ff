package statuspage

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultRingSize is how many records a Ring made with size 0 keeps.
const DefaultRingSize = 64

// maxRecordText bounds the message and the attributes a Record keeps, so
// that a ring's memory is bounded whatever is logged.
const maxRecordText = 2048

// Record is one log record a Ring kept.
type Record struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"`
	Msg   string    `json:"msg"`
	Attrs string    `json:"attrs,omitempty"` // key=value pairs, as logged
}

// Refusals counts the records about callers a Ring did not keep, by
// message (the reason: "meta rpc refused a call").
type Refusals struct {
	Reason string `json:"reason"`
	Count  uint64 `json:"count"`
}

// callerKeys are the attributes naming a caller (peer: its address; who:
// its identity, as authz logs a denied call): a record with one is
// about a remote peer (a refused connection or call, whose "why" may name
// the identity, its role and --root), so the page, which needs no
// credentials, shows only how many there were by message.
var callerKeys = map[string]bool{"peer": true, "who": true, "identity": true, "caller": true}

// maxReasons bounds the messages Refusals are counted under; the rest
// are counted as otherReason.
const (
	maxReasons  = 32
	otherReason = "other refusals"
)

// Ring keeps the latest records at level Warn and above, and counts those
// about callers without keeping them; it is safe for concurrent use.
type Ring struct {
	mu      sync.Mutex
	size    int
	recs    []Record // oldest first once full: recs[next:] then recs[:next]
	next    int
	total   uint64            // records ever added
	refused map[string]uint64 // records about callers, by message
}

// held is the count of like lines a rate limit held back before r
// (ratelog's "suppressed" attribute), 0 when none.
func held(r slog.Record) uint64 {
	var n uint64
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "suppressed" {
			return true
		}
		switch v := a.Value.Resolve(); v.Kind() {
		case slog.KindInt64:
			n = uint64(max(v.Int64(), 0))
		case slog.KindUint64:
			n = v.Uint64()
		}
		return false
	})
	return n
}

func (r *Ring) refusal(msg string, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refused == nil {
		r.refused = map[string]uint64{}
	}
	if _, ok := r.refused[msg]; !ok && len(r.refused) >= maxReasons {
		msg = otherReason
	}
	r.refused[msg] += n
}

// Refused returns the counts of records about callers, by reason, in
// order of reason.
func (r *Ring) Refused() []Refusals {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Refusals, 0, len(r.refused))
	for k, n := range r.refused {
		out = append(out, Refusals{Reason: k, Count: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}

// NewRing returns a ring that keeps the latest size records
// (DefaultRingSize when size <= 0).
func NewRing(size int) *Ring {
	if size <= 0 {
		size = DefaultRingSize
	}
	return &Ring{size: size}
}

func (r *Ring) add(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if len(r.recs) < r.size {
		r.recs = append(r.recs, rec)
		return
	}
	r.recs[r.next] = rec
	r.next = (r.next + 1) % r.size
}

// Recent returns the kept records, newest first, and how many records
// were ever added (more than returned once the ring has wrapped).
func (r *Ring) Recent() ([]Record, uint64) {
	if r == nil {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Record, 0, len(r.recs))
	for i := range r.recs {
		out = append(out, r.recs[(r.next+len(r.recs)-1-i)%len(r.recs)])
	}
	return out, r.total
}

// Tee returns a handler that passes every record to next and keeps those
// at level Warn and above in ring, with the attributes and groups the
// logger carries; those about a caller (an attribute of callerKeys) it
// only counts, by message.
func Tee(next slog.Handler, ring *Ring) slog.Handler {
	return &teeHandler{next: next, ring: ring}
}

type teeHandler struct {
	next   slog.Handler
	ring   *Ring
	prefix string // attributes of WithAttrs, formatted
	group  string // "g1.g2." of WithGroup
	caller bool   // WithAttrs named a caller (callerKeys)
}

// aboutCaller reports whether r has an attribute naming a caller.
func aboutCaller(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = callerKeys[a.Key]
		return !found
	})
	return found
}

func (h *teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && (h.caller || aboutCaller(r)) {
		h.ring.refusal(cut(r.Message), 1+held(r))
	} else if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(h.prefix)
		r.Attrs(func(a slog.Attr) bool {
			appendAttr(&b, h.group, a)
			return b.Len() < maxRecordText
		})
		h.ring.add(Record{Time: r.Time, Level: r.Level.String(), Msg: cut(r.Message), Attrs: cut(b.String())})
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range as {
		appendAttr(&b, h.group, a)
	}
	caller := h.caller
	for _, a := range as {
		caller = caller || callerKeys[a.Key]
	}
	return &teeHandler{next: h.next.WithAttrs(as), ring: h.ring, prefix: cut(b.String()), group: h.group, caller: caller}
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &teeHandler{next: h.next.WithGroup(name), ring: h.ring, prefix: h.prefix, group: h.group + name + ".", caller: h.caller}
}

// appendAttr writes " key=value" (groups flattened to g.key).
func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, ga := range v.Group() {
			appendAttr(b, g, ga)
		}
		return
	}
	if a.Equal(slog.Attr{}) {
		return
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	fmt.Fprintf(b, "%s%s=%v", group, a.Key, v.Any())
}

// cut bounds s to maxRecordText bytes.
func cut(s string) string {
	if len(s) <= maxRecordText {
		return s
	}
	return s[:maxRecordText] + "…"
}
