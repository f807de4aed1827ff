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
// bytes stored, its file system's size and free space, and, with a
// scrubber (nil when the scrub is off), the scrub's progress.
func BlockStore(reg prometheus.Registerer, st Usage, sc *scrub.Scrubber) {
	reg.MustRegister(&storeCollector{st: st, sc: sc})
}

var (
	storedBlocks = gauge("tessera_blockd_stored_blocks",
		"Blocks the block server stores.")
	storedBytes = gauge("tessera_blockd_stored_bytes",
		"Bytes of the blocks the block server stores.")
	fsSize = gauge("tessera_blockd_filesystem_size_bytes",
		"Size of the file system the block server's directory is on.")
	fsFree = gauge("tessera_blockd_filesystem_free_bytes",
		"Bytes free for the block server on its file system (as statfs's f_bavail).")
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
	describeAll(ch, storedBlocks, storedBytes, fsSize, fsFree)
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
		fsSize.fail(ch, err)
	} else {
		fsSize.emit(ch, float64(fs.Blocks)*float64(fs.Bsize))
		fsFree.emit(ch, float64(fs.Bavail)*float64(fs.Bsize))
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
