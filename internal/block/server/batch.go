package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"tessera/internal/block"
)

func (h *Handler) remove(w http.ResponseWriter, r *http.Request) {
	hash, ok := h.parseName(w, r)
	if !ok {
		return
	}
	notAfter, err := ParseOlderThan(r.URL.Query())
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, ClassBadRequest, fmt.Errorf("remove block %s: %w", hash, err))
		return
	}
	removed, err := h.b.Remove(r.Context(), hash, notAfter)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	writeJSON(w, struct {
		Removed bool `json:"removed"`
	}{removed})
}

// removeMany is POST /v1/remove: the conditional removal of DELETE for
// each record, with the record's own cutoff.
func (h *Handler) removeMany(w http.ResponseWriter, r *http.Request) {
	body, release, err := h.readBatch(w, r, "remove", MaxRemoveBatch*RemoveRecordSize,
		fmt.Sprintf("at most %d records of %d bytes per request", MaxRemoveBatch, RemoveRecordSize))
	if release == nil {
		return
	}
	defer release() // the removals are made before the reply
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) { // chunked, without a length to refuse first
			h.fail(w, r, http.StatusRequestEntityTooLarge, ClassTooLarge,
				fmt.Errorf("remove: at most %d records of %d bytes per request", MaxRemoveBatch, RemoveRecordSize))
			return
		}
		h.fail(w, r, http.StatusBadRequest, ClassBadRequest, fmt.Errorf("remove: read body: %w", err))
		return
	}
	rs, err := DecodeRemovals(body)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, ClassBadRequest, fmt.Errorf("remove: %w", err))
		return
	}
	var removed []bool
	if br, ok := h.b.(block.BatchRemover); ok {
		removed, err = br.RemoveMany(r.Context(), rs)
	} else {
		removed = make([]bool, len(rs))
		for i, rm := range rs {
			if removed[i], err = h.b.Remove(r.Context(), rm.Hash, rm.NotAfter); err != nil {
				break
			}
		}
	}
	if err == nil && len(removed) != len(rs) {
		err = fmt.Errorf("remove: the store answered for %d of %d records", len(removed), len(rs))
	}
	if err != nil {
		// The removals made before the error stand: each is conditional
		// and idempotent, and the caller asks again.
		h.failErr(w, r, err)
		return
	}
	reply := make([]byte, len(removed))
	for i, ok := range removed {
		if ok {
			reply[i] = 1
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
	w.Write(reply)
}

// readBatch reads the body of a batched POST (/v1/has, /v1/remove) of at
// most max bytes: one declaring more is refused (413, limit says what the
// most is) before anything is read, and its declared length (a chunked
// one: max) is reserved from the in-flight budget first. A nil release:
// the reply is sent. Otherwise release gives the reservation back, err is
// the body's read error (the caller answers it), and the reply's deadline
// runs from now.
func (h *Handler) readBatch(w http.ResponseWriter, r *http.Request, op string, max int64, limit string) (body []byte, release func(), err error) {
	if r.ContentLength > max {
		h.fail(w, r, http.StatusRequestEntityTooLarge, ClassTooLarge, fmt.Errorf("%s: body of %d bytes: %s", op, r.ContentLength, limit))
		return nil, nil, nil
	}
	n := r.ContentLength
	if n < 0 {
		n = max
	}
	// The body and the records decoded from it are both held while the
	// request is served: twice the body's bytes.
	release, err = h.reserve(r, 2*n)
	if err != nil {
		h.failErr(w, r, fmt.Errorf("%s: %w", op, err))
		return nil, nil, nil
	}
	pr := newPaceReader(w, r.Body, h.lim, n)
	in := http.MaxBytesReader(nil, io.NopCloser(pr), max)
	if r.ContentLength >= 0 {
		// Read into a buffer of the declared size, not one ReadAll grows
		// by copying; a body longer than it declared is an error.
		body = make([]byte, n)
		if _, err = io.ReadFull(in, body); err == nil {
			var one [1]byte
			if m, _ := in.Read(one[:]); m > 0 {
				err = fmt.Errorf("body longer than its Content-Length %d", n)
			}
		}
	} else {
		body, err = io.ReadAll(in)
	}
	pr.done()
	h.replyDeadline(w)
	return body, release, err
}

func (h *Handler) has(w http.ResponseWriter, r *http.Request) {
	body, release, err := h.readBatch(w, r, "has", MaxHasBatch*block.HashSize, fmt.Sprintf("at most %d hashes per request", MaxHasBatch))
	if release == nil {
		return
	}
	defer release()
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, ClassBadRequest, fmt.Errorf("has: read body: %w", err))
		return
	}
	hs, err := DecodeHashes(body)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, ClassBadRequest, fmt.Errorf("has: %w", err))
		return
	}
	var has []bool
	if r.URL.Query().Get("touch") == "1" {
		t, ok := h.b.(block.Toucher)
		if !ok {
			h.fail(w, r, http.StatusNotImplemented, ClassBadRequest, errors.New("has: this server cannot touch blocks"))
			return
		}
		has, err = t.Touch(r.Context(), hs)
	} else {
		has, err = h.b.Has(r.Context(), hs)
	}
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	reply := make([]byte, len(has))
	for i, ok := range has {
		if ok {
			reply[i] = 1
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
	w.Write(reply)
}
