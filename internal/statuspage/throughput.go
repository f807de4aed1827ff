package statuspage

import (
	"sync"
	"time"
)

// What the page can say about throughput. Data does not pass through the
// meta role: mounts write blocks to the block servers and read them from
// there. The counters the meta role does have are the logical bytes of
// every file (meta StatFS) and the bytes stored on the block servers
// (their usage); from two samples of each the page shows their rate of
// change: the net rate at which files grow (writes that extend files less
// truncates and deletes) and at which stored bytes grow (new blocks less
// reclaimed ones). Overwrites in place and reads change neither, and no
// counter of them reaches the meta role, so the page says so instead of
// showing a number (a block server's own metrics count its bytes in and
// out).
const readNote = "not measured here: reads go from the mounts straight to the block servers, " +
	"and no counter of them reaches the meta service (see the block servers' metrics)"

// minSampleGap is the shortest time between the two samples a rate is
// computed from; requests closer together show the last rate again.
const minSampleGap = time.Second

// Throughput is the page's throughput section.
type Throughput struct {
	// Measured is false until two samples at least minSampleGap apart
	// were taken (the first view of the page).
	Measured bool    `json:"measured"`
	Interval float64 `json:"interval_seconds"` // between the two samples
	// LogicalBytesPerSec is the net growth rate of the files' bytes;
	// StoredBytesPerSec that of the bytes on the block servers. Either
	// may be negative (deletes, reclamation).
	LogicalBytesPerSec float64 `json:"logical_bytes_per_second"`
	StoredBytesPerSec  float64 `json:"stored_bytes_per_second"`
	// StoredMeasured is false when a block server did not report its
	// usage in one of the two samples (their sum is then not comparable).
	StoredMeasured bool `json:"stored_measured"`
	// Reads says why no read rate is shown.
	Reads string `json:"reads"`
}

// sample is one reading of the counters.
type sample struct {
	at              time.Time
	logical, stored int64
	storedOK        bool // every server not down reported its usage
}

// sampler keeps the latest sample and the latest rate; safe for
// concurrent use (requests run in parallel).
type sampler struct {
	mu   sync.Mutex
	last *sample
	rate Throughput
}

// add takes a new sample and returns the throughput: the rate between
// the previous sample and this one when they are far enough apart, else
// the rate computed last.
func (s *sampler) add(cur sample) Throughput {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.last == nil:
		s.last = &cur
	case cur.at.Sub(s.last.at) >= minSampleGap:
		dt := cur.at.Sub(s.last.at).Seconds()
		s.rate = Throughput{Measured: true, Interval: dt,
			LogicalBytesPerSec: float64(cur.logical-s.last.logical) / dt}
		if cur.storedOK && s.last.storedOK {
			s.rate.StoredMeasured = true
			s.rate.StoredBytesPerSec = float64(cur.stored-s.last.stored) / dt
		}
		s.last = &cur
	}
	t := s.rate
	t.Reads = readNote
	return t
}
