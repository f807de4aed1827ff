package server

import (
	"errors"
	"net/http"

	"tessera/internal/block"
)

func (h *Handler) usage(w http.ResponseWriter, r *http.Request) {
	blocks, bytes, err := h.b.Usage(r.Context())
	h.replyDeadline(w)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	reply := UsageReply{Blocks: blocks, Bytes: bytes}
	if sp, ok := h.b.(block.Spacer); ok {
		if free, size, err := sp.Space(r.Context()); err == nil {
			reply.Free, reply.Size = &free, &size
		}
	}
	writeJSON(w, reply)
}

// UsageReply is the reply of GET /v1/usage. Free and Size are absent when
// the backend cannot say (block.Spacer).
type UsageReply struct {
	Blocks int64  `json:"blocks"`
	Bytes  int64  `json:"bytes"`
	Free   *int64 `json:"free,omitempty"`
	Size   *int64 `json:"size,omitempty"`
}

// CheckReply is the reply of POST /v1/check/{hex}.
type CheckReply struct {
	State  string `json:"state"`  // CheckGood, CheckCorrupt or CheckMissing
	Detail string `json:"detail"` // for a corrupt copy: the store's error (file, quarantine)
}

// States of CheckReply.
const (
	CheckGood    = "good"
	CheckCorrupt = "corrupt"
	CheckMissing = "missing"
)

func (h *Handler) check(w http.ResponseWriter, r *http.Request) {
	hash, ok := h.parseName(w, r)
	if !ok {
		return
	}
	c, ok := h.b.(block.Checker)
	if !ok {
		h.fail(w, r, http.StatusNotImplemented, ClassBadRequest, errors.New("check: this server cannot check blocks in place"))
		return
	}
	quarantine := r.URL.Query().Get("quarantine") == "1"
	err := c.Check(r.Context(), hash, quarantine)
	h.replyDeadline(w)
	var rep CheckReply
	switch {
	case err == nil:
		rep.State = CheckGood
	case errors.Is(err, block.ErrNotFound):
		rep.State = CheckMissing
	case errors.Is(err, block.ErrCorrupt):
		rep.State, rep.Detail = CheckCorrupt, err.Error()
		h.log.Error("corrupt block", "block", hash, "quarantine", quarantine, "err", err)
	default:
		h.failErr(w, r, err)
		return
	}
	writeJSON(w, rep)
}

func (h *Handler) scrubProgress(w http.ResponseWriter, r *http.Request) {
	if h.scrub == nil {
		h.fail(w, r, http.StatusNotFound, ClassNotFound, errors.New("scrub: not running on this server (--scrub-rate 0)"))
		return
	}
	writeJSON(w, h.scrub())
}
