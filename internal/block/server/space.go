package server

import (
	"errors"
	"net/http"

	"tessera/internal/block"
)

// SpaceReply is the reply of GET /v1/space (block.Space). OnDisk is absent
// when the backend cannot say, FS when it cannot name its file system.
type SpaceReply struct {
	OnDisk *int64 `json:"on_disk,omitempty"`
	Free   int64  `json:"free"`
	Size   int64  `json:"size"`
	FS     string `json:"fs,omitempty"`
}

func (h *Handler) space(w http.ResponseWriter, r *http.Request) {
	var reply SpaceReply
	switch b := h.b.(type) {
	case block.SpaceReporter:
		sp, err := b.SpaceInfo(r.Context())
		if err != nil {
			h.failErr(w, r, err)
			return
		}
		reply = SpaceReply{Free: sp.Free, Size: sp.Size, FS: sp.FS}
		if sp.OnDisk >= 0 {
			reply.OnDisk = &sp.OnDisk
		}
	case block.Spacer:
		free, size, err := b.Space(r.Context())
		if err != nil {
			h.failErr(w, r, err)
			return
		}
		reply = SpaceReply{Free: free, Size: size}
	default:
		h.fail(w, r, http.StatusNotImplemented, ClassBadRequest, errors.New("space: this server cannot tell its space"))
		return
	}
	h.replyDeadline(w)
	writeJSON(w, reply)
}
