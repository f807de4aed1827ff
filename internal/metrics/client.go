package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/client"
)

// Client registers with reg the series of a mount's client, read from
// Client.Stats at each scrape.
func Client(reg prometheus.Registerer, c *client.Client) {
	reg.MustRegister(&clientCollector{c: c})
}

var (
	cacheHits = counter("tessera_client_cache_hits_total",
		"Block and stat lookups answered by a cache, by tier: memory, disk (the local disk cache), memcached (blocks in the shared tier), memcached_stat (stat results in the shared tier).", "tier")
	cacheMisses = counter("tessera_client_cache_misses_total",
		"Block and stat lookups a cache could not answer, by tier (as tessera_client_cache_hits_total).", "tier")
	tierErrors = counter("tessera_client_cache_tier_errors_total",
		"Operations on the memcached tier that failed (a connection, a server): each costs a miss, never an error.")
	memBytes = gauge("tessera_client_memory_cache_bytes",
		"Bytes of blocks in the client's memory cache.")
	dirtyBytes = gauge("tessera_client_dirty_bytes",
		"Bytes written and not yet stored on the block servers (buffered or uploading).")
	commits = counter("tessera_client_commits_total",
		"Recipe commits that succeeded.")
	conflicts = counter("tessera_client_commit_conflicts_total",
		"Commits refused because a block changed underneath (each answered by a redo or, past the attempts allowed, a failure).")
	redoRetries = counter("tessera_client_redo_retries_total",
		"Commits sent again after a redo on the current content.")
	commitsFailed = counter("tessera_client_commits_failed_total",
		"Commits given up (EIO to the application).")
	callbacksIn = counter("tessera_client_callbacks_total",
		"Callbacks received from the meta service (another mount changed a file this one caches).")
	blockSent = counter("tessera_client_block_sent_bytes_total",
		"Block bytes stored on the block servers, every copy counted.")
	blockRecv = counter("tessera_client_block_received_bytes_total",
		"Block bytes fetched from the block servers (the copies on this host read directly included).")
	idleReleases = counter("tessera_client_idle_releases_total",
		"Times an idle mount gave its cached blocks and spare buffers back.")
)

type clientCollector struct{ c *client.Client }

func (cc *clientCollector) Describe(ch chan<- *prometheus.Desc) {
	describeAll(ch, cacheHits, cacheMisses, tierErrors, memBytes, dirtyBytes, commits, conflicts,
		redoRetries, commitsFailed, callbacksIn, blockSent, blockRecv, idleReleases)
}

func (cc *clientCollector) Collect(ch chan<- prometheus.Metric) {
	st := cc.c.Stats()
	for _, t := range []struct {
		tier       string
		hits, miss uint64
	}{
		{"memory", st.MemHits, st.MemMisses},
		{"disk", st.DiskHits, st.DiskMisses},
		{"memcached", st.TierHits, st.TierMisses},
		{"memcached_stat", st.AttrHits, st.AttrMisses},
	} {
		cacheHits.emit(ch, float64(t.hits), t.tier)
		cacheMisses.emit(ch, float64(t.miss), t.tier)
	}
	tierErrors.emit(ch, float64(st.TierErrors))
	memBytes.emit(ch, float64(st.MemBytes))
	dirtyBytes.emit(ch, float64(st.DirtyBytes))
	commits.emit(ch, float64(st.Commits))
	conflicts.emit(ch, float64(st.Conflicts))
	redoRetries.emit(ch, float64(st.RedoRetries))
	commitsFailed.emit(ch, float64(st.CommitsFailed))
	callbacksIn.emit(ch, float64(st.Callbacks))
	blockSent.emit(ch, float64(st.BlockBytesSent))
	blockRecv.emit(ch, float64(st.BlockBytesReceived))
	idleReleases.emit(ch, float64(st.IdleReleases))
}
