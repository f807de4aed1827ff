package server

import (
	"bufio"
	"encoding/binary"
	"net/http"
	"strconv"
	"time"

	"tessera/internal/block"
)

// list streams every block as a ListRecordSize-byte record, then reports
// completion (or the failure) in a trailer.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Trailer", ListCountTrailer+", "+ListErrorTrailer)
	w.Header().Set("Content-Type", "application/octet-stream")
	rc := http.NewResponseController(w)
	// The header goes at once: the walk may take a while to find the
	// blocks that fill the first buffer, and a client times its try out
	// until the reply starts (then the records' own stall bound applies).
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	bw := bufio.NewWriterSize(stallGuard{w, rc}, 64<<10)
	var count int64
	var rec [ListRecordSize]byte
	err := h.b.List(r.Context(), func(info block.Info) error {
		copy(rec[:], info.Hash[:])
		binary.BigEndian.PutUint64(rec[block.HashSize:], uint64(info.Size))
		binary.BigEndian.PutUint64(rec[block.HashSize+8:], uint64(info.ModTime))
		count++
		_, err := bw.Write(rec[:])
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if r.Context().Err() == nil {
			h.log.Error("list blocks failed", "after", count, "err", err)
		}
		w.Header().Set(ListErrorTrailer, err.Error())
		return
	}
	w.Header().Set(ListCountTrailer, strconv.FormatInt(count, 10))
}

// stallTimeout bounds how long one write of a streamed reply may block on a
// client that stopped reading.
const stallTimeout = time.Minute

// stallGuard extends the write deadline before each write, so that a
// listing may take as long as it needs but a stalled reader cannot pin it.
type stallGuard struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (g stallGuard) Write(p []byte) (int, error) {
	_ = g.rc.SetWriteDeadline(time.Now().Add(stallTimeout))
	return g.w.Write(p)
}
