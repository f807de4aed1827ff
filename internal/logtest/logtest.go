// Package logtest holds what tests need to read what code logged.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log sink (for slog's handlers) that the goroutines of the
// code under test may write to while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
