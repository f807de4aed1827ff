package server

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/tlsconn"
)

// getVerified serves a GET of a whole block on a TLS connection, where
// sendfile cannot go: plain HTTP's way (OpenBlock hashing the file, then
// ServeContent copying it in 32 KiB reads, each written as two TLS records
// with a write(2) each) read the file twice and woke the reader for every
// 16 KiB. Here the file is read once into a pooled buffer, hashed there and
// sent in one Write under a cork (tlsconn.Cork: FlushSize per write(2)).
//
// The buffer is memory the server did not hold with sendfile, so it comes
// out of the in-flight budget (Limits) like a PUT's; when the budget has
// no room now, the block is streamed as on plain HTTP instead of refused.
// A block that does not hash to its name goes to the store's own check
// (OpenBlock with verify), which reports and quarantines it as for any
// other read.
func (h *Handler) getVerified(w http.ResponseWriter, r *http.Request, hash block.Hash) {
	f, info, err := h.files.OpenBlock(r.Context(), hash, false)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	defer f.Close()
	release := h.budget.tryAcquire(peerOf(r.RemoteAddr), info.Size)
	if release == nil {
		h.getStream(w, r, hash, true)
		return
	}
	defer release()
	data := h.bufs.get(int(info.Size))
	defer h.bufs.put(data)
	if _, err := io.ReadFull(f, data); err != nil {
		h.failErr(w, r, fmt.Errorf("get block %s: read %s: %w", hash, h.files.Path(hash), err))
		return
	}
	if block.Sum(data) != hash {
		h.getStream(w, r, hash, true) // the store's verdict and quarantine
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(h.lim.bodyDeadline(time.Now(), info.Size))
	setBlockHeaders(w, hash)
	// The headers ServeContent sends for a whole file; not ServeContent
	// itself, which copies through a 32 KiB buffer. Its conditional
	// requests are not needed here: a block never changes.
	hd := w.Header()
	hd.Set("Accept-Ranges", "bytes")
	hd.Set("Last-Modified", time.Unix(0, info.ModTime).UTC().Format(http.TimeFormat))
	hd.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	uncork := tlsconn.Cork(connOf(r))
	defer uncork()
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}
