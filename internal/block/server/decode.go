package server

import (
	"encoding/binary"
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

// DecodeRemovals decodes the body of POST /v1/remove: RemoveRecordSize-byte
// records, each a hash and its older-than (int64 unix ns, big endian), at
// most MaxRemoveBatch of them.
func DecodeRemovals(body []byte) ([]block.Removal, error) {
	if len(body)%RemoveRecordSize != 0 {
		return nil, fmt.Errorf("body of %d bytes is not a sequence of %d-byte records (hash, older-than)", len(body), RemoveRecordSize)
	}
	if len(body)/RemoveRecordSize > MaxRemoveBatch {
		return nil, fmt.Errorf("%d records: at most %d per request", len(body)/RemoveRecordSize, MaxRemoveBatch)
	}
	rs := make([]block.Removal, len(body)/RemoveRecordSize)
	for i := range rs {
		rec := body[i*RemoveRecordSize:]
		rs[i] = block.Removal{Hash: block.Hash(rec), NotAfter: int64(binary.BigEndian.Uint64(rec[block.HashSize:]))}
	}
	return rs, nil
}

// EncodeRemovals is the body of POST /v1/remove for rs (DecodeRemovals'
// inverse).
func EncodeRemovals(rs []block.Removal) []byte {
	body := make([]byte, 0, len(rs)*RemoveRecordSize)
	for _, r := range rs {
		body = append(body, r.Hash[:]...)
		body = binary.BigEndian.AppendUint64(body, uint64(r.NotAfter))
	}
	return body
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
