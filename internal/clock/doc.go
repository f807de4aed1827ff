// Package clock is the time source of the code whose tests are about time:
// the client's upload ages (internal/client), the block client's watchdogs
// and budgets (internal/block/client) and the low-water-mark pacing
// (internal/lowat).
//
// Contract. Clock has the few operations those packages need: Now, and
// timers that deliver on a channel (NewTimer) or run a function
// (AfterFunc). Real is the machine's clock; a nil Clock in an Options or
// Config means Real. Fake is a clock that moves only when a test calls
// Advance: timers whose deadline it passes fire, in deadline order, before
// Advance returns (an AfterFunc's function runs in its own goroutine, as
// with the time package). Tests then assert what happens after a given
// amount of clock time, whatever the machine's load.
//
// Fake counts the timers armed on it (Arms: every NewTimer, AfterFunc and
// Reset), so that a test can wait for the code under test to have reacted
// (re-armed a watchdog) before it moves time on.
package clock
