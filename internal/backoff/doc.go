// Package backoff is the one exponential backoff of Tessera: the waits
// between the tries of a call that failed for a reason that may pass (a
// block server, the meta service or a cache server that does not answer, a
// commit that conflicts, an upload or a write-back that failed).
//
// Contract. A Policy states the waits: the first is Base, each next one is
// Factor (2 when 0) times the previous, and none is above Max (0: no cap).
// Jitter, a fraction in [0, 1], spreads each wait d uniformly over
// [d(1-Jitter), d(1+Jitter)) so that clients that failed together do not
// retry in step; the cap applies before the jitter. The draws come from
// Policy.Rand (tests give a seeded source, so that the waits replay) or,
// when nil, from math/rand/v2's global source. Policy.Check names what is
// wrong with a Policy built from configuration.
//
// Policy.Delay(n) is the wait after n failures, without jitter, for callers
// that keep the count themselves (a persisted attempt counter). A Backoff
// is the state of one sequence of retries: Next returns the next wait and
// moves on, Wait sleeps it on an injected clock (internal/clock) and
// returns the context's error if the context ends first, Reset starts the
// sequence again (after a success). A Backoff is not safe for concurrent
// use; a Policy is, when its Rand is.
//
// The package only computes and sleeps: it starts no goroutine and keeps
// no state beyond a Backoff's.
package backoff
