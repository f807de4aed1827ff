package cachetier

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"strconv"
	"time"

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
	got, val, ok := p.getLatest(ctx, p.attrKey(ino, change), ino, change)
	return val, ok && got == change
}

// SetAttr caches value as the attributes of inode ino at change counter
// change. The value is opaque (the caller encodes it), at most MaxAttrSize
// bytes. An error is for the caller's logs; the tier works without it.
func (p *Pool) SetAttr(ctx context.Context, ino, change uint64, value []byte) error {
	return p.setLatest(ctx, p.attrKey(ino, change), ino, change, value, p.opts.AttrTTL)
}

// Items of the newest known state. GetAttr and SetAttr above name a value
// by inode and change counter, which a caller can only use when it already
// knows the counter. A stat does not: it wants the newest attributes, so
// these items are keyed by the inode alone (and a directory entry by its
// parent and name) and carry their change counter; the caller decides
// whether a value is fresh enough (client: younger than the file's
// attribute TTL). Same framing and checks as the change-keyed items.

// anyChange asks getLatest for an item whatever its change counter.
const anyChange = ^uint64(0)

func (p *Pool) latestKey(kind string, id uint64, name string) string {
	b := make([]byte, 0, 48+len(p.opts.Namespace))
	b = append(b, kind...)
	if p.opts.Namespace != "" {
		b = append(b, p.opts.Namespace...)
		b = append(b, ':')
	}
	b = strconv.AppendUint(b, id, 10)
	if kind == "te:" {
		// Names may hold bytes memcached keys cannot: hash them; the
		// name itself is stored in the item and compared.
		f := fnv.New64a()
		f.Write([]byte(name))
		b = append(b, ':')
		b = strconv.AppendUint(b, f.Sum64(), 16)
	}
	return string(b)
}

// frame wraps value for id at change with the magic and a CRC-32C.
func frame(id, change uint64, value []byte) []byte {
	v := make([]byte, 0, attrHeaderSize+len(value))
	v = append(v, attrMagic...)
	v = binary.BigEndian.AppendUint64(v, id)
	v = binary.BigEndian.AppendUint64(v, change)
	v = binary.BigEndian.AppendUint32(v, crc32.Checksum(value, castagnoli))
	return append(v, value...)
}

// unframe checks an item against id and its checksum and returns its
// change counter and value.
func unframe(v []byte, id uint64) (change uint64, val []byte, err error) {
	if len(v) < attrHeaderSize || string(v[:4]) != attrMagic {
		return 0, nil, fmt.Errorf("%w: attribute item without the magic", errMiss)
	}
	if binary.BigEndian.Uint64(v[4:]) != id {
		return 0, nil, fmt.Errorf("%w: attribute item of another inode", errMiss)
	}
	val = v[attrHeaderSize:]
	if crc32.Checksum(val, castagnoli) != binary.BigEndian.Uint32(v[20:]) {
		return 0, nil, fmt.Errorf("%w: attribute item fails its checksum", errMiss)
	}
	return binary.BigEndian.Uint64(v[12:]), val, nil
}

// getLatest reads the item key about id; when want is not anyChange, an
// item of another change is a miss.
func (p *Pool) getLatest(ctx context.Context, key string, id, want uint64) (uint64, []byte, bool) {
	s := p.attrServer(key)
	var val []byte
	var change uint64
	err := p.run(ctx, s, func() error {
		items, err := s.client.Get(ctx, key)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return errMiss
		}
		change, val, err = unframe(items[0].Value, id)
		if err == nil && want != anyChange && change != want {
			err = fmt.Errorf("%w: attribute item of another change", errMiss)
		}
		return err
	})
	if err != nil {
		p.attr.misses.Add(1)
		return 0, nil, false
	}
	p.attr.hits.Add(1)
	return change, val, true
}

func (p *Pool) setLatest(ctx context.Context, key string, id, change uint64, value []byte, ttl time.Duration) error {
	if len(value) > MaxAttrSize {
		return fmt.Errorf("cache tier: set %s: %w: %d bytes, at most %d", key, ErrTooLarge, len(value), MaxAttrSize)
	}
	s := p.attrServer(key)
	err := p.run(ctx, s, func() error {
		return s.client.Set(ctx, memcache.Item{Key: key, Value: frame(id, change, value), Exptime: p.exptime(ttl)})
	})
	if err != nil {
		return fmt.Errorf("cache tier: set %s: %w", key, err)
	}
	return nil
}

// GetInode returns the newest attribute value cached for inode ino and
// its change counter; false on a miss.
func (p *Pool) GetInode(ctx context.Context, ino uint64) (change uint64, value []byte, ok bool) {
	return p.getLatest(ctx, p.latestKey("ti:", ino, ""), ino, anyChange)
}

// SetInode caches value as the attributes of inode ino at change. The item
// expires after ttl (0: Options.AttrTTL) — at most as long as any reader
// may trust it.
func (p *Pool) SetInode(ctx context.Context, ino, change uint64, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = p.opts.AttrTTL
	}
	return p.setLatest(ctx, p.latestKey("ti:", ino, ""), ino, change, value, ttl)
}

// GetEntry returns the value cached for the entry name of directory parent
// (the caller's encoding of what the name resolves to); false on a miss or
// when the item is another name's (hash collision).
func (p *Pool) GetEntry(ctx context.Context, parent uint64, name string) ([]byte, bool) {
	_, v, ok := p.getLatest(ctx, p.latestKey("te:", parent, name), parent, anyChange)
	if !ok || len(v) < 2 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(v))
	if len(v) < 2+n || string(v[2:2+n]) != name {
		return nil, false
	}
	return v[2+n:], true
}

// SetEntry caches value for the entry name of directory parent, expiring
// after ttl (0: Options.AttrTTL).
func (p *Pool) SetEntry(ctx context.Context, parent uint64, name string, value []byte, ttl time.Duration) error {
	if len(name) > 0xffff {
		return fmt.Errorf("cache tier: set entry: %w: name of %d bytes", ErrTooLarge, len(name))
	}
	if ttl <= 0 {
		ttl = p.opts.AttrTTL
	}
	v := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(name)+len(value)), uint16(len(name)))
	v = append(append(v, name...), value...)
	return p.setLatest(ctx, p.latestKey("te:", parent, name), parent, 0, v, ttl)
}
