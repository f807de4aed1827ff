package cluster

import "sync"

// logBuf keeps the last max bytes a child wrote to one of its streams, and
// the total count so callers can ask for "what came after this mark".
type logBuf struct {
	max int
	mu  struct {
		sync.Mutex
		buf   []byte
		total int64 // bytes ever written; buf holds the last len(buf) of them
	}
}

func newLogBuf(max int) *logBuf { return &logBuf{max: max} }

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.buf = append(l.mu.buf, p...)
	l.mu.total += int64(len(p))
	if over := len(l.mu.buf) - l.max; over > 0 {
		l.mu.buf = append(l.mu.buf[:0], l.mu.buf[over:]...)
	}
	return len(p), nil
}

// Mark returns the current total, for a later Since.
func (l *logBuf) Mark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.total
}

// Since returns what was written after mark, as far as it is still held.
func (l *logBuf) Since(mark int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := l.mu.total - int64(len(l.mu.buf))
	if mark < start {
		mark = start
	}
	return string(l.mu.buf[mark-start:])
}

// Tail returns at most n of the last bytes written.
func (l *logBuf) Tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.mu.buf
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
