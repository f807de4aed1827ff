package client

// bufList is a bounded free list of write buffers of one size (the default
// block size): a file written sequentially reuses the buffers of blocks
// already uploaded instead of allocating (and zeroing) 4 MiB per block.
// Unlike a sync.Pool it survives garbage collections.
type bufList struct {
	size int
	free chan []byte
}

func newBufList(size, n int) *bufList {
	return &bufList{size: size, free: make(chan []byte, n)}
}

// get returns an empty buffer of capacity c.
func (l *bufList) get(c int) []byte {
	if c == l.size {
		select {
		case b := <-l.free:
			return b[:0]
		default:
		}
	}
	return make([]byte, 0, c)
}

// put gives b back; buffers of another size, or beyond the bound, are left
// to the garbage collector.
func (l *bufList) put(b []byte) {
	if cap(b) != l.size {
		return
	}
	select {
	case l.free <- b[:0]:
	default:
	}
}

// drain drops the free buffers.
func (l *bufList) drain() {
	for {
		select {
		case <-l.free:
		default:
			return
		}
	}
}
