package metrics

import (
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/prometheus/client_golang/prometheus"
)

// FUSEOps are a mount's series of the requests the kernel sends it.
type FUSEOps struct {
	ops      *prometheus.CounterVec   // op, result
	secs     *prometheus.HistogramVec // op
	inflight prometheus.Gauge
	read     prometheus.Counter
	written  prometheus.Counter
}

// NewFUSEOps registers a mount's FUSE series with reg.
func NewFUSEOps(reg prometheus.Registerer) *FUSEOps {
	m := &FUSEOps{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_fuse_requests_total",
			Help: "FUSE requests answered, by opcode and result (ok, not_found, interrupted, error).",
		}, []string{"op", "result"}),
		secs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tessera_fuse_request_duration_seconds",
			Help: "FUSE request latency by opcode, from the file system's receipt to its answer.",
			// 10 µs (a cached getattr) to 40 s (an fsync waiting out a slow
			// block server).
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 12),
		}, []string{"op"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tessera_fuse_requests_in_flight",
			Help: "FUSE requests the file system is answering now: the mount's queue depth.",
		}),
		read: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tessera_fuse_read_bytes_total",
			Help: "Bytes answered to FUSE reads (what applications read through the mount, past the kernel's page cache).",
		}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tessera_fuse_written_bytes_total",
			Help: "Bytes accepted by FUSE writes (what applications wrote through the mount).",
		}),
	}
	reg.MustRegister(m.ops, m.secs, m.inflight, m.read, m.written)
	return m
}

// begin counts a request in flight and returns its start.
func (m *FUSEOps) begin() time.Time {
	m.inflight.Inc()
	return time.Now()
}

// done records a request of op begun at start that answered *st.
func (m *FUSEOps) done(op string, start time.Time, st *gofuse.Status) {
	m.inflight.Dec()
	m.ops.WithLabelValues(op, fuseResult(*st)).Inc()
	m.secs.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func fuseResult(st gofuse.Status) string {
	switch st {
	case gofuse.OK:
		return "ok"
	case gofuse.ENOENT:
		return "not_found"
	case gofuse.Status(syscall.EINTR):
		return "interrupted"
	}
	return "error"
}

// FUSE returns fs counting and timing, in m, the requests it answers. Put
// it between the kernel and the file system (fuse.Options.Wrap): the
// methods it does not override (forget, init, ...) go to fs unrecorded.
func FUSE(fs gofuse.RawFileSystem, m *FUSEOps) gofuse.RawFileSystem {
	return &fuseFS{RawFileSystem: fs, m: m}
}

type fuseFS struct {
	gofuse.RawFileSystem
	m *FUSEOps
}

// Read implements gofuse.RawFileSystem, counting the bytes answered.
func (f *fuseFS) Read(cancel <-chan struct{}, input *gofuse.ReadIn, buf []byte) (res gofuse.ReadResult, st gofuse.Status) {
	defer f.m.done("read", f.m.begin(), &st)
	res, st = f.RawFileSystem.Read(cancel, input, buf)
	if st == gofuse.OK && res != nil {
		f.m.read.Add(float64(res.Size()))
	}
	return res, st
}

// Write implements gofuse.RawFileSystem, counting the bytes accepted.
func (f *fuseFS) Write(cancel <-chan struct{}, input *gofuse.WriteIn, data []byte) (n uint32, st gofuse.Status) {
	defer f.m.done("write", f.m.begin(), &st)
	n, st = f.RawFileSystem.Write(cancel, input, data)
	f.m.written.Add(float64(n))
	return n, st
}

// Release implements gofuse.RawFileSystem.
func (f *fuseFS) Release(cancel <-chan struct{}, input *gofuse.ReleaseIn) {
	st := gofuse.OK
	defer f.m.done("release", f.m.begin(), &st)
	f.RawFileSystem.Release(cancel, input)
}

// ReleaseDir implements gofuse.RawFileSystem.
func (f *fuseFS) ReleaseDir(input *gofuse.ReleaseIn) {
	st := gofuse.OK
	defer f.m.done("releasedir", f.m.begin(), &st)
	f.RawFileSystem.ReleaseDir(input)
}
