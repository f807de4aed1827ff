package server

import (
	"math/bits"
	"sync"
)

// bufPool recycles PUT receive buffers in power-of-two size classes from
// 64 KiB up, so that a steady stream of 4 MiB blocks allocates nothing.
type bufPool struct {
	classes [40]sync.Pool // class c holds *[]byte with cap 1<<(c+minShift)
}

const minShift = 16

func class(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// get returns a buffer of length n (and capacity n rounded up to its class).
func (p *bufPool) get(n int) *[]byte {
	c := class(n)
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(c+minShift))
	return &b
}

// put returns b to the pool.
func (p *bufPool) put(b *[]byte) {
	c := class(cap(*b))
	if cap(*b) != 1<<(c+minShift) {
		return // not one of ours
	}
	p.classes[c].Put(b)
}
