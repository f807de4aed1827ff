package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/meta"
)

// MetaState is what the meta collector reads: *meta.Service has it.
type MetaState interface {
	LeaseStats() meta.LeaseStats
	StatFS(ctx context.Context) (meta.StatFS, error)
	Servers(ctx context.Context) (meta.ServerMap, error)
	MoverProgress(ctx context.Context) (meta.MoverProgress, error)
}

// Meta registers with reg the meta service's state series: sessions,
// leases and callbacks, the namespace's size, the block servers by state,
// and the mover's progress (its latest report, stored by the mover in the
// service; every meta process reports the same).
func Meta(reg prometheus.Registerer, svc MetaState) {
	reg.MustRegister(&metaCollector{svc: svc})
}

// collectTimeout bounds the store reads of one scrape.
const collectTimeout = 5 * time.Second

var (
	sessions = gauge("tessera_meta_sessions",
		"Client sessions the meta service holds (one per mount).")
	leases = gauge("tessera_meta_leases",
		"Leases the sessions hold: inodes a mount caches and is called back about.")
	opens = gauge("tessera_meta_open_handles",
		"Opens the sessions hold (a file or directory open on a mount).")
	cbPending = gauge("tessera_meta_callbacks_pending",
		"Callbacks queued and not yet acknowledged by their mount.")
	cbTotal = counter("tessera_meta_callbacks_total",
		"Callbacks queued to mounts since the service started.")
	files = gauge("tessera_meta_files",
		"Inodes in use.")
	logical = gauge("tessera_meta_logical_bytes",
		"Sum of the files' sizes.")
	servers = gauge("tessera_meta_block_servers",
		"Block servers in the map by state (up, down, draining).", "state")
	replicas = gauge("tessera_meta_replicas",
		"The cluster's default replication factor.")
	moverRounds = counter("tessera_mover_rounds_total",
		"Mover rounds completed.")
	moverRunning = gauge("tessera_mover_running",
		"1 while a mover round is under way.")
	moverBlocks = gauge("tessera_mover_blocks",
		"Live blocks the latest mover round saw.")
	moverUnder = gauge("tessera_mover_under_replicated_blocks",
		"Blocks with fewer live copies than their replication factor.")
	moverMisplaced = gauge("tessera_mover_misplaced_blocks",
		"Blocks with a copy outside their placement.")
	moverLost = gauge("tessera_mover_lost_blocks",
		"Live blocks no server holds a good copy of.")
	moverToMove = gauge("tessera_mover_to_move_bytes",
		"Bytes the mover still has to copy.")
	moverMoved = gauge("tessera_mover_moved_bytes",
		"Bytes copied in the current (or latest) round.")
	moverFailed = gauge("tessera_mover_round_failed",
		"1 when the latest mover round ended with an error.")
	moverAt = gauge("tessera_mover_report_timestamp_seconds",
		"Unix time of the mover's latest report.")
)

type metaCollector struct{ svc MetaState }

func (mc *metaCollector) Describe(ch chan<- *prometheus.Desc) {
	describeAll(ch, sessions, leases, opens, cbPending, cbTotal, files, logical, servers, replicas,
		moverRounds, moverRunning, moverBlocks, moverUnder, moverMisplaced, moverLost, moverToMove,
		moverMoved, moverFailed, moverAt)
}

func (mc *metaCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	ls := mc.svc.LeaseStats()
	sessions.emit(ch, float64(ls.Sessions))
	leases.emit(ch, float64(ls.Leases))
	opens.emit(ch, float64(ls.Opens))
	cbPending.emit(ch, float64(ls.Pending))
	cbTotal.emit(ch, float64(ls.Queued))

	if st, err := mc.svc.StatFS(ctx); err != nil {
		files.fail(ch, err)
	} else {
		files.emit(ch, float64(st.Files))
		logical.emit(ch, float64(st.LogicalBytes))
	}
	if m, err := mc.svc.Servers(ctx); err != nil {
		servers.fail(ch, err)
	} else {
		by := map[string]int{meta.StateUp: 0, meta.StateDown: 0, meta.StateDraining: 0}
		for _, s := range m.Servers {
			by[s.State]++
		}
		for state, n := range by {
			servers.emit(ch, float64(n), state)
		}
		replicas.emit(ch, float64(m.Replicas))
	}
	p, err := mc.svc.MoverProgress(ctx)
	if err != nil {
		moverRounds.fail(ch, err)
		return
	}
	moverRounds.emit(ch, float64(p.Round))
	moverRunning.emit(ch, boolf(p.Running))
	moverBlocks.emit(ch, float64(p.Blocks))
	moverUnder.emit(ch, float64(p.UnderReplicated))
	moverMisplaced.emit(ch, float64(p.Misplaced))
	moverLost.emit(ch, float64(p.Lost))
	moverToMove.emit(ch, float64(p.BytesToMove))
	moverMoved.emit(ch, float64(p.BytesMoved))
	moverFailed.emit(ch, boolf(p.Err != ""))
	moverAt.emit(ch, float64(p.At)/1e9)
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
