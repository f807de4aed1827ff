package wan

import (
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// shapeType is the name under which the shaping toxic is registered in
// toxiproxy's registry of toxic types.
const shapeType = "tessera_wan_shape"

func init() {
	toxics.Register(shapeType, new(shapeToxic))
}

// gate is a Link's outage switch, shared by both directions: while shut,
// chunks wait at it (Blackhole). closed ends every wait for good (Close).
type gate struct {
	closed chan struct{}

	mu     sync.Mutex
	healed chan struct{} // nil while open; closed by open()
}

func newGate() *gate { return &gate{closed: make(chan struct{})} }

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.healed == nil {
		g.healed = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.healed != nil {
		close(g.healed)
		g.healed = nil
	}
}

func (g *gate) isShut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.healed != nil
}

// wait blocks while the gate is shut. It reports false when the Link was
// closed or the toxic interrupted meanwhile (interrupted says which).
func (g *gate) wait(interrupt <-chan struct{}) (ok, interrupted bool) {
	for {
		g.mu.Lock()
		ch := g.healed
		g.mu.Unlock()
		if ch == nil {
			return true, false
		}
		select {
		case <-ch:
		case <-interrupt:
			return false, true
		case <-g.closed:
			return false, false
		}
	}
}

// shapeToxic is the first toxic of each direction's chain: it holds chunks
// while the gate is shut, paces them to the cap and counts them. It then
// restamps each chunk, so that the latency toxic after it adds the full
// latency to the time spent queued (serialization plus propagation).
//
// toxiproxy creates the toxic from JSON; Link sets dir before the proxy
// starts, and the toxic chain never changes after that, so an interrupt
// (which toxiproxy sends only when the chain changes) does not happen in
// practice; if it does, the held chunk is passed on rather than dropped.
type shapeToxic struct {
	dir *direction
}

// Pipe moves chunks from stub.Input to stub.Output until the input ends.
func (t *shapeToxic) Pipe(stub *toxics.ToxicStub) {
	var flow schedule // this connection's own cap (toxiproxy runs Pipe per connection)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if !t.pass(stub, c, &flow) {
				return
			}
		}
	}
}

// pass waits for the gate, the connection's own cap (flow) and the
// direction's shared cap, then sends c on. It reports false when Pipe must
// return.
func (t *shapeToxic) pass(stub *toxics.ToxicStub, c *stream.StreamChunk, flow *schedule) bool {
	ok, interrupted := t.dir.gate.wait(stub.Interrupt)
	if interrupted {
		stub.Output <- c
		return false
	}
	if !ok {
		t.drain(stub)
		return false
	}
	for _, d := range []func() time.Duration{
		func() time.Duration { return flow.reserve(t.dir.flowRate.Load(), len(c.Data), time.Now()) },
		func() time.Duration { return t.dir.reserve(len(c.Data), time.Now()) },
	} {
		switch t.sleep(stub, d()) {
		case interruptedSleep:
			stub.Output <- c
			return false
		case closedSleep:
			t.drain(stub)
			return false
		}
	}
	t.dir.bytes.Add(int64(len(c.Data)))
	c.Timestamp = time.Now()
	stub.Output <- c
	return true
}

// How a sleep of the shaper ended.
const (
	sleptOut = iota
	interruptedSleep
	closedSleep
)

// sleep waits d, or until the toxic is interrupted or the Link closed.
func (t *shapeToxic) sleep(stub *toxics.ToxicStub, d time.Duration) int {
	if d <= 0 {
		return sleptOut
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return sleptOut
	case <-stub.Interrupt:
		return interruptedSleep
	case <-t.dir.gate.closed:
		return closedSleep
	}
}

// drain discards what is left of a closed Link's connection, so that the
// goroutines before this toxic are not left blocked, and ends the chain.
func (t *shapeToxic) drain(stub *toxics.ToxicStub) {
	for c := range stub.Input {
		if c == nil {
			break
		}
	}
	stub.Close()
}
