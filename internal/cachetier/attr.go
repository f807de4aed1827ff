package cachetier

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"strconv"

	"tessera/internal/cachetier/memcache"
)

// MaxAttrSize is the largest attribute value the tier holds.
const MaxAttrSize = 32 << 10

const (
	attrMagic      = "TCA1"
	attrHeaderSize = 4 + 8 + 8 + 4 // magic, ino, change, CRC-32C
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (p *Pool) attrKey(ino, change uint64) string {
	b := make([]byte, 0, 48+len(p.opts.Namespace))
	b = append(b, "ta:"...)
	if p.opts.Namespace != "" {
		b = append(b, p.opts.Namespace...)
		b = append(b, ':')
	}
	b = strconv.AppendUint(b, ino, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, change, 10)
	return string(b)
}

func (p *Pool) attrServer(key string) *server {
	f := fnv.New64a()
	f.Write([]byte(key))
	return p.pick(f.Sum64())
}

// GetAttr returns the attribute value cached for inode ino at change
// counter change; false on a miss (or a down server, or a value that fails
// its checks).
func (p *Pool) GetAttr(ctx context.Context, ino, change uint64) ([]byte, bool) {
	key := p.attrKey(ino, change)
	s := p.attrServer(key)
	var val []byte
	err := p.run(ctx, s, func() error {
		items, err := s.client.Get(ctx, key)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return errMiss
		}
		val, err = parseAttr(items[0].Value, ino, change)
		return err
	})
	if err != nil {
		p.attr.misses.Add(1)
		return nil, false
	}
	p.attr.hits.Add(1)
	return val, true
}

// SetAttr caches value as the attributes of inode ino at change counter
// change. The value is opaque (the caller encodes it), at most MaxAttrSize
// bytes. An error is for the caller's logs; the tier works without it.
func (p *Pool) SetAttr(ctx context.Context, ino, change uint64, value []byte) error {
	if len(value) > MaxAttrSize {
		return fmt.Errorf("cache tier: set attr %d@%d: %w: %d bytes, at most %d", ino, change, ErrTooLarge, len(value), MaxAttrSize)
	}
	key := p.attrKey(ino, change)
	s := p.attrServer(key)
	v := make([]byte, 0, attrHeaderSize+len(value))
	v = append(v, attrMagic...)
	v = binary.BigEndian.AppendUint64(v, ino)
	v = binary.BigEndian.AppendUint64(v, change)
	v = binary.BigEndian.AppendUint32(v, crc32.Checksum(value, castagnoli))
	v = append(v, value...)
	err := p.run(ctx, s, func() error {
		return s.client.Set(ctx, memcache.Item{Key: key, Value: v, Exptime: p.exptime(p.opts.AttrTTL)})
	})
	if err != nil {
		return fmt.Errorf("cache tier: set attr %d@%d: %w", ino, change, err)
	}
	return nil
}

// parseAttr checks an attribute item against the inode and change counter
// it was asked for, and its checksum.
func parseAttr(v []byte, ino, change uint64) ([]byte, error) {
	if len(v) < attrHeaderSize || string(v[:4]) != attrMagic {
		return nil, fmt.Errorf("%w: attribute item without the magic", errMiss)
	}
	if binary.BigEndian.Uint64(v[4:]) != ino || binary.BigEndian.Uint64(v[12:]) != change {
		return nil, fmt.Errorf("%w: attribute item of another inode or change", errMiss)
	}
	val := v[attrHeaderSize:]
	if crc32.Checksum(val, castagnoli) != binary.BigEndian.Uint32(v[20:]) {
		return nil, fmt.Errorf("%w: attribute item fails its checksum", errMiss)
	}
	return val, nil
}
