package cachetier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"tessera/internal/block"
	"tessera/internal/cachetier/memcache"
)

// MaxBlockSize is the largest block the tier holds.
const MaxBlockSize = 64 << 20

const (
	blockMagic = "TCB1"
	headerSize = 4 + 8 + 4 + 4 // magic, size, chunk size, chunk count
)

// errMiss reports a block or attribute the tier does not have (complete).
var errMiss = errors.New("cache miss")

// header is a block's header item.
type header struct {
	size      int // bytes in the block
	chunkSize int // bytes per chunk item (the last may be shorter)
	chunks    int // number of chunk items; 0: the data is inline
}

func headerKey(h block.Hash) string { return "tb:" + h.String() }

func chunkKeys(h block.Hash, n int) []string {
	base := "tb:" + h.String() + ":"
	keys := make([]string, n)
	for i := range keys {
		keys[i] = base + strconv.Itoa(i)
	}
	return keys
}

// appendHeader appends hd's encoding to b.
func appendHeader(b []byte, hd header) []byte {
	b = append(b, blockMagic...)
	b = binary.BigEndian.AppendUint64(b, uint64(hd.size))
	b = binary.BigEndian.AppendUint32(b, uint32(hd.chunkSize))
	return binary.BigEndian.AppendUint32(b, uint32(hd.chunks))
}

// parseHeader decodes a header item; inline is the data that follows it
// when hd.chunks is 0. maxChunk bounds the chunk size (the client's value
// limit).
func parseHeader(v []byte, maxChunk int) (hd header, inline []byte, err error) {
	if len(v) < headerSize || string(v[:4]) != blockMagic {
		return hd, nil, fmt.Errorf("header of %d bytes without the magic", len(v))
	}
	size := binary.BigEndian.Uint64(v[4:])
	cs := binary.BigEndian.Uint32(v[12:])
	n := binary.BigEndian.Uint32(v[16:])
	if size > MaxBlockSize {
		return hd, nil, fmt.Errorf("header says %d bytes, more than %d", size, MaxBlockSize)
	}
	hd = header{size: int(size), chunkSize: int(cs), chunks: int(n)}
	if n == 0 {
		if len(v)-headerSize != hd.size {
			return hd, nil, fmt.Errorf("inline block of %d bytes, header says %d", len(v)-headerSize, size)
		}
		return hd, v[headerSize:], nil
	}
	switch {
	case len(v) != headerSize:
		return hd, nil, fmt.Errorf("chunked block header with %d extra bytes", len(v)-headerSize)
	case cs == 0 || int(cs) > maxChunk:
		return hd, nil, fmt.Errorf("chunk size %d not in 1..%d", cs, maxChunk)
	case uint64(n) != (size+uint64(cs)-1)/uint64(cs):
		return hd, nil, fmt.Errorf("%d chunks of %d bytes for a %d-byte block", n, cs, size)
	}
	return hd, nil, nil
}

// GetBlock returns block h from the tier, verified against h; false on a
// miss, a down server, or anything wrong with the items.
func (p *Pool) GetBlock(ctx context.Context, h block.Hash) ([]byte, bool) {
	data, err := p.getBlock(ctx, h)
	return data, err == nil
}

// getBlock is GetBlock with the reason of a miss: errMiss, ErrServerDown,
// block.ErrCorrupt (torn or mismatching items), or an error of the server
// or of ctx.
func (p *Pool) getBlock(ctx context.Context, h block.Hash) ([]byte, error) {
	s := p.pick(binary.LittleEndian.Uint64(h[:8]))
	var data []byte
	err := p.run(ctx, s, func() (err error) {
		data, err = p.readBlock(ctx, s, h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cache tier: get block %s: %w", h.Short(), err)
	}
	return data, nil
}

func (p *Pool) readBlock(ctx context.Context, s *server, h block.Hash) ([]byte, error) {
	items, err := s.client.Get(ctx, headerKey(h))
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, errMiss
	}
	hd, data, err := parseHeader(items[0].Value, s.client.MaxValue())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", block.ErrCorrupt, s.addr, err)
	}
	if hd.chunks > 0 {
		data = make([]byte, hd.size)
		found, torn := 0, false
		err := s.client.GetInto(ctx, chunkKeys(h, hd.chunks), func(i int, _ uint32, n int) []byte {
			lo := i * hd.chunkSize
			hi := min(lo+hd.chunkSize, hd.size)
			if n != hi-lo {
				torn = true
				return nil
			}
			found++
			return data[lo:hi]
		})
		switch {
		case err != nil:
			return nil, err
		case torn:
			return nil, fmt.Errorf("%w: %s: chunk of the wrong size", block.ErrCorrupt, s.addr)
		case found < hd.chunks:
			return nil, fmt.Errorf("%w: %d of %d chunks", errMiss, found, hd.chunks)
		}
	}
	if block.Sum(data) != h {
		return nil, fmt.Errorf("%w: %s: content does not match the hash", block.ErrCorrupt, s.addr)
	}
	return data, nil
}

// SetBlock stores data as block h in the tier, synchronously: chunks first,
// then the header. It trusts that data matches h (readers verify).
func (p *Pool) SetBlock(ctx context.Context, h block.Hash, data []byte) error {
	if len(data) > MaxBlockSize {
		return fmt.Errorf("cache tier: set block %s: %w: %d bytes", h.Short(), ErrTooLarge, len(data))
	}
	s := p.pick(binary.LittleEndian.Uint64(h[:8]))
	err := p.run(ctx, s, func() error { return p.writeBlock(ctx, s, h, data) })
	if err != nil {
		return fmt.Errorf("cache tier: set block %s: %w", h.Short(), err)
	}
	return nil
}

func (p *Pool) writeBlock(ctx context.Context, s *server, h block.Hash, data []byte) error {
	exp := p.exptime(p.opts.BlockTTL)
	cs := p.opts.ChunkSize
	if len(data) <= cs {
		v := make([]byte, 0, headerSize+len(data))
		v = appendHeader(v, header{size: len(data)})
		v = append(v, data...)
		return s.client.Set(ctx, memcache.Item{Key: headerKey(h), Value: v, Exptime: exp})
	}
	hd := header{size: len(data), chunkSize: cs, chunks: (len(data) + cs - 1) / cs}
	keys := chunkKeys(h, hd.chunks)
	items := make([]memcache.Item, hd.chunks)
	for i := range items {
		items[i] = memcache.Item{Key: keys[i], Value: data[i*cs : min((i+1)*cs, len(data))], Exptime: exp}
	}
	if err := s.client.SetMulti(ctx, items); err != nil {
		return err
	}
	return s.client.Set(ctx, memcache.Item{Key: headerKey(h), Value: appendHeader(nil, hd), Exptime: exp})
}

// blockServerUp reports whether an operation on block h would reach its
// server now (so a fill is worth queueing).
func (p *Pool) blockServerUp(h block.Hash) bool {
	return p.pick(binary.LittleEndian.Uint64(h[:8])).health.up(p.opts.Now())
}
