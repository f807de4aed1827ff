package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"tessera/internal/block/scrub"
)

// Usage is what the block store collector reads of a store: *disk.Store
// has it.
type Usage interface {
	Usage(ctx context.Context) (blocks, bytes int64, err error)
	Dir() string
}

// BlockStore registers with reg a block server's store series: blocks and
// bytes stored, the free fraction of its file system, and, with a
// scrubber (nil when the scrub is off), the scrub's progress.
func BlockStore(reg prometheus.Registerer, st Usage, sc *scrub.Scrubber) {
	reg.MustRegister(&storeCollector{st: st, sc: sc})
}

var (
	storedBlocks = gauge("tessera_blockd_stored_blocks",
		"Blocks the block server stores.")
	storedBytes = gauge("tessera_blockd_stored_bytes",
		"Bytes of the blocks the block server stores.")
	// The file system's free space is a ratio, not bytes: block servers
	// sharing a file system (tessera up) would each report the same
	// bytes, and sums of byte series across a process would mix the file
	// system's size into the bytes Tessera moved. Absolute figures are on
	// the status page and in statfs.
	fsFree = gauge("tessera_blockd_filesystem_free_ratio",
		"Fraction of the file system of the block server's directory that is free to it (statfs f_bavail / f_blocks).")
	scrubRounds = counter("tessera_scrub_rounds_total",
		"Scrub rounds completed.")
	scrubRunning = gauge("tessera_scrub_running",
		"1 while a scrub round is under way.")
	scrubBlocks = gauge("tessera_scrub_round_blocks",
		"Blocks verified in the current (or latest) scrub round.")
	scrubBytes = gauge("tessera_scrub_round_bytes",
		"Bytes verified in the current (or latest) scrub round.")
	scrubCorrupt = counter("tessera_scrub_corrupt_total",
		"Corrupt copies the scrub found (and moved aside) since the server started.")
	scrubFailed = gauge("tessera_scrub_round_failed",
		"1 when the latest scrub round ended with an error other than corruption.")
	scrubRate = gauge("tessera_scrub_rate_limit_bytes_per_second",
		"The scrub's pace limit (negative: unlimited).")
)

type storeCollector struct {
	st Usage
	sc *scrub.Scrubber
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	describeAll(ch, storedBlocks, storedBytes, fsFree)
	if c.sc != nil {
		describeAll(ch, scrubRounds, scrubRunning, scrubBlocks, scrubBytes, scrubCorrupt, scrubFailed, scrubRate)
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	if n, b, err := c.st.Usage(ctx); err != nil {
		storedBlocks.fail(ch, err)
	} else {
		storedBlocks.emit(ch, float64(n))
		storedBytes.emit(ch, float64(b))
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(c.st.Dir(), &fs); err != nil {
		fsFree.fail(ch, err)
	} else if fs.Blocks > 0 {
		fsFree.emit(ch, float64(fs.Bavail)/float64(fs.Blocks))
	}
	if c.sc == nil {
		return
	}
	p := c.sc.Progress()
	scrubRounds.emit(ch, float64(p.Rounds))
	scrubRunning.emit(ch, boolf(p.Running))
	scrubBlocks.emit(ch, float64(p.Blocks))
	scrubBytes.emit(ch, float64(p.Bytes))
	scrubCorrupt.emit(ch, float64(p.Corrupt))
	scrubFailed.emit(ch, boolf(p.Err != ""))
	scrubRate.emit(ch, float64(p.Rate))
}
