package server

import (
	"io"
	"net/http"
	"time"
)

// paceReader reads a request body under the body limits: before each read
// it moves the connection's read deadline to BodyIdleTimeout from now, but
// never past the body's overall deadline (Limits.bodyDeadline). A peer that
// stops sending, or trickles, gets a read error and its request ends,
// giving back its in-flight bytes.
//
// Connection deadlines are on the machine's clock, not an injected one: it
// is the kernel that wakes the read.
type paceReader struct {
	r     io.Reader
	rc    *http.ResponseController
	idle  time.Duration
	final time.Time
	set   time.Time // the deadline last set
}

func newPaceReader(w http.ResponseWriter, r io.Reader, l Limits, n int64) *paceReader {
	now := time.Now()
	return &paceReader{r: r, rc: http.NewResponseController(w), idle: l.BodyIdleTimeout, final: l.bodyDeadline(now, n)}
}

func (p *paceReader) Read(b []byte) (int, error) {
	d := time.Now().Add(p.idle)
	if d.After(p.final) {
		d = p.final
	}
	// Setting a deadline is a system call's worth of work; moving it
	// by less than an eighth of the idle timeout gains nothing.
	if d.Sub(p.set) > p.idle/8 || d.Equal(p.final) && !p.set.Equal(p.final) {
		_ = p.rc.SetReadDeadline(d)
		p.set = d
	}
	return p.r.Read(b)
}

// done clears the read deadline: the server's background read (which
// notices a client hanging up) must not time out while the request is
// served.
func (p *paceReader) done() { _ = p.rc.SetReadDeadline(time.Time{}) }
