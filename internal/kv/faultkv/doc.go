// Package faultkv wraps a kv.Store and injects faults into its Updates on
// a seeded schedule (and reruns into its Views), so that the code on top
// (the meta service) runs its conflict and error paths in ordinary tests.
//
// Contract. A View draws a rerun (Options.Rerun): its run is cut short at
// one of its first reads (the read fails) and fn runs again on the wrapped
// store, as kv.Store's contract allows; a run that finishes before the cut
// stands. Other Views pass through untouched. Each Update run draws, from a
// generator seeded with Options.Seed, one of:
//   - a conflict (Options.Conflict): fn runs in a transaction of the
//     wrapped store, its writes are rolled back and fn runs again, as an
//     engine does when its commit conflicts; the caller sees nothing but
//     fn running more than once (at most MaxConflicts times in a row);
//   - an exhausted conflict (Options.Exhaust): fn runs, its writes are
//     rolled back and Update returns an error wrapping kv.ErrConflict, as
//     when an engine's retries run out;
//   - a failure (Options.Fail): fn runs, its writes are rolled back and
//     Update returns an error wrapping ErrInjected (an I/O error at
//     commit);
//   - nothing: the Update runs as the wrapped store runs it.
//
// Nothing an Update that failed wrote is ever visible. The schedule is
// reproducible for a given seed and sequence of Updates. Pause stops
// injecting (for checks after a run); Stats counts what was injected.
package faultkv
