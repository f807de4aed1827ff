package server

import (
	"fmt"
	"net/url"
	"strconv"

	"tessera/internal/block"
)

// DecodeHashes decodes the body of POST /v1/has: concatenated hashes, at
// most MaxHasBatch of them.
func DecodeHashes(body []byte) ([]block.Hash, error) {
	if len(body)%block.HashSize != 0 {
		return nil, fmt.Errorf("body of %d bytes is not a sequence of %d-byte hashes", len(body), block.HashSize)
	}
	if len(body)/block.HashSize > MaxHasBatch {
		return nil, fmt.Errorf("%d hashes: at most %d per request", len(body)/block.HashSize, MaxHasBatch)
	}
	hs := make([]block.Hash, len(body)/block.HashSize)
	for i := range hs {
		hs[i] = block.Hash(body[i*block.HashSize:])
	}
	return hs, nil
}

// ParseOlderThan decodes the older-than parameter of DELETE
// /v1/blocks/{hex}: a time in unix nanoseconds, required, given once.
func ParseOlderThan(q url.Values) (int64, error) {
	vs := q["older-than"]
	if len(vs) != 1 {
		return 0, fmt.Errorf("query parameter older-than=<unix ns> is required once, got %d values", len(vs))
	}
	n, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("query parameter older-than=<unix ns>: %q is not an integer", vs[0])
	}
	return n, nil
}
