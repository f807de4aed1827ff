package server

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// bufPool recycles PUT receive buffers in power-of-two size classes from
// 64 KiB up, so that a steady stream of 4 MiB blocks allocates nothing. It
// keeps at most poolBytes (and 64 buffers) per class and poolTotal in all.
// Unlike a sync.Pool it survives garbage collections, which large blocks
// make frequent; drain empties it once a burst is over (release.go).
type bufPool struct {
	once    sync.Once
	classes [maxClass + 1]chan []byte
	held    atomic.Int64 // capacity of the buffers in the pool
}

const (
	minShift  = 16 // smallest class: 64 KiB
	maxClass  = 30 - minShift
	poolBytes = 64 << 20
	poolTotal = 128 << 20

	// hashSlack is spare capacity after each buffer: with less than 16 KiB
	// of capacity past its tail the BLAKE3 hasher copies small subtrees.
	hashSlack = 16 << 10
)

func class(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

func (p *bufPool) init() {
	for c := range p.classes {
		p.classes[c] = make(chan []byte, min(64, max(1, poolBytes>>(c+minShift))))
	}
}

// get returns a buffer of length n.
func (p *bufPool) get(n int) []byte {
	p.once.Do(p.init)
	c := class(n)
	if c > maxClass {
		return make([]byte, n)
	}
	select {
	case b := <-p.classes[c]:
		p.held.Add(-int64(cap(b)))
		return b[:n]
	default:
		return make([]byte, n, 1<<(c+minShift)+hashSlack)
	}
}

// put returns a buffer from get to the pool.
func (p *bufPool) put(b []byte) {
	p.once.Do(p.init)
	c := class(cap(b) - hashSlack)
	if c > maxClass || cap(b) != 1<<(c+minShift)+hashSlack {
		return // not one of ours
	}
	if p.held.Add(int64(cap(b))) > poolTotal {
		p.held.Add(-int64(cap(b)))
		return
	}
	select {
	case p.classes[c] <- b:
	default:
		p.held.Add(-int64(cap(b)))
	}
}

// drain drops every pooled buffer and returns the bytes they held.
func (p *bufPool) drain() int64 {
	p.once.Do(p.init)
	var n int64
	for _, ch := range p.classes {
		for empty := false; !empty; {
			select {
			case b := <-ch:
				p.held.Add(-int64(cap(b)))
				n += int64(cap(b))
			default:
				empty = true
			}
		}
	}
	return n
}
