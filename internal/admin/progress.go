package admin

// Progress is one report of a long operation (GC, Fsck, Drain) on its way:
// how far it is through its current phase. Reports come often (up to one
// per block): a ProgressFunc only records them, it is the renderer that
// decides how often to show one.
type Progress struct {
	Op    string // "gc", "fsck", "drain"
	Phase string // the step under way, e.g. "walk", "scan", "check", "move"
	// Done and Total count the phase's units (blocks); Total 0 means it
	// is not known (a walk of the recipes).
	Done, Total int64
	// Bytes and TotalBytes are the bytes behind Done and Total, where the
	// phase knows them (0 otherwise).
	Bytes, TotalBytes int64
}

// ProgressFunc receives the reports of a long operation, from the goroutine
// that runs it; it must not block for long.
type ProgressFunc func(Progress)

// report calls c.Progress if it is set.
func (c *Cluster) report(p Progress) {
	if c.Progress != nil {
		c.Progress(p)
	}
}

// walkEvery is how many recipe entries a walk reads between two reports.
const walkEvery = 4096
