package metarpc

import (
	"sync"
	"time"
)

// SpeakProtocol makes a server (or client) of another protocol version,
// for the handshake's tests.
func (o ServeOptions) SpeakProtocol(v int) ServeOptions { o.protocol = v; return o }

// SpeakProtocol makes a client of another protocol version.
func (o DialOptions) SpeakProtocol(v int) DialOptions { o.protocol = v; return o }

// BudgetUse is what one peer holds of the server's per-peer budgets.
type BudgetUse = budgetUse

// BudgetProbe reads the per-peer budgets of a running server.
type BudgetProbe struct {
	mu sync.Mutex
	b  *budgets
}

// Use is what peer (an IP address) holds now; zero before Serve started.
func (p *BudgetProbe) Use(peer string) BudgetUse {
	p.mu.Lock()
	b := p.b
	p.mu.Unlock()
	if b == nil {
		return BudgetUse{}
	}
	return b.use(peer)
}

// ProbeBudgets makes the server started with these options report to p.
func (o ServeOptions) ProbeBudgets(p *BudgetProbe) ServeOptions {
	o.budgetWatch = func(b *budgets) { p.mu.Lock(); p.b = b; p.mu.Unlock() }
	return o
}

// LogClock sets the clock of the rate limit of the server's refusal lines.
func (o ServeOptions) LogClock(now func() time.Time) ServeOptions { o.logNow = now; return o }
