package meta

import (
	"context"
	"encoding/binary"
	"fmt"

	"tessera/internal/block"
)

// maxProgressErr bounds the error text a progress record keeps.
const maxProgressErr = 4096

// keyProgress holds the mover's latest MoverProgress (see doc.go).
var keyProgress = []byte("mprogress")

// Flag bits of the progress record.
const (
	progressRunning = 1
	progressSites   = 2 // a per-site section follows the error text
	// progressLag: each site of the per-site section has its bytes and
	// since after its count (absent in records written before).
	progressLag = 4
)

// encodeProgress encodes a mover progress record; an over-long Err is cut.
func encodeProgress(p *MoverProgress) []byte {
	var flags byte
	if p.Running {
		flags |= progressRunning
	}
	sites := p.UnderBySite[:min(len(p.UnderBySite), MaxSitesReported)]
	if len(sites) > 0 {
		flags |= progressSites | progressLag
	}
	b := make([]byte, 0, 2+8*8+2+len(p.Err))
	b = append(b, recordV1, flags)
	be := binary.BigEndian
	b = be.AppendUint64(b, p.Round)
	for _, v := range []int64{p.At, p.Blocks, p.UnderReplicated, p.Misplaced, p.BytesToMove, p.BytesMoved} {
		b = be.AppendUint64(b, uint64(v))
	}
	e := p.Err
	if len(e) > maxProgressErr {
		e = e[:maxProgressErr]
	}
	b = appendString(b, e)
	if len(sites) > 0 {
		b = append(b, byte(len(sites)))
		for _, c := range sites {
			b = appendString(b, c.Site)
			b = be.AppendUint64(b, uint64(c.N))
			b = be.AppendUint64(b, uint64(c.Bytes))
			b = be.AppendUint64(b, uint64(c.Since))
		}
	}
	if p.Lost == 0 && len(p.LostBlocks) == 0 {
		return b // the section is absent, as in records written before it
	}
	b = be.AppendUint64(b, uint64(p.Lost))
	lost := p.LostBlocks[:min(len(p.LostBlocks), MaxLostReported)]
	b = append(b, byte(len(lost)))
	for _, l := range lost {
		b = append(b, l.Hash[:]...)
		inos := l.Inos[:min(len(l.Inos), MaxLostInodes)]
		b = append(b, byte(len(inos)))
		for _, ino := range inos {
			b = be.AppendUint64(b, uint64(ino))
		}
	}
	return b
}

// decodeProgress decodes what encodeProgress wrote.
func decodeProgress(b []byte) (MoverProgress, error) {
	r := reader{b: b, what: "mover progress"}
	r.version()
	var p MoverProgress
	flags := r.fixed(1)
	if r.err == nil && (flags[0]&^(progressRunning|progressSites|progressLag) != 0 ||
		flags[0]&progressLag != 0 && flags[0]&progressSites == 0) {
		r.fail("unknown flags %#x", flags[0])
	}
	if r.err == nil {
		p.Running = flags[0]&progressRunning != 0
	}
	p.Round = r.u64()
	for _, f := range []*int64{&p.At, &p.Blocks, &p.UnderReplicated, &p.Misplaced, &p.BytesToMove, &p.BytesMoved} {
		*f = int64(r.u64())
	}
	p.Err = r.str(maxProgressErr, "error")
	if r.err == nil && flags[0]&progressSites != 0 {
		decodeSites(&r, &p, flags[0]&progressLag != 0)
	}
	if r.err == nil && len(r.b) > 0 {
		decodeLost(&r, &p)
	}
	if err := r.end(); err != nil {
		return MoverProgress{}, err
	}
	return p, nil
}

// decodeSites reads the per-site section of a progress record.
func decodeSites(r *reader, p *MoverProgress, lag bool) {
	n := r.fixed(1)
	if r.err != nil {
		return
	}
	if n[0] == 0 || int(n[0]) > MaxSitesReported {
		r.fail("per-site section of %d sites", n[0])
		return
	}
	for range n[0] {
		c := SiteCount{Site: r.str(MaxServerID, "site")}
		c.N = int64(r.u64())
		if lag {
			c.Bytes, c.Since = int64(r.u64()), int64(r.u64())
		}
		if r.err == nil && (c.Site == "" || c.N <= 0 || c.Bytes < 0 || c.Since < 0) {
			r.fail("per-site count %q: %d (%d bytes, since %d)", c.Site, c.N, c.Bytes, c.Since)
		}
		if r.err != nil {
			return
		}
		p.UnderBySite = append(p.UnderBySite, c)
	}
}

// decodeLost reads the lost section of a progress record.
func decodeLost(r *reader, p *MoverProgress) {
	p.Lost = int64(r.u64())
	n := r.fixed(1)
	if r.err != nil {
		return
	}
	if int(n[0]) > MaxLostReported || int64(n[0]) > p.Lost || p.Lost == 0 {
		r.fail("lost section: %d blocks named of %d lost", n[0], p.Lost)
		return
	}
	for range n[0] {
		var l LostBlock
		copy(l.Hash[:], r.fixed(block.HashSize))
		k := r.fixed(1)
		if r.err != nil {
			return
		}
		if int(k[0]) > MaxLostInodes {
			r.fail("lost block with %d inodes", k[0])
			return
		}
		for range k[0] {
			l.Inos = append(l.Inos, Ino(r.u64()))
		}
		p.LostBlocks = append(p.LostBlocks, l)
	}
}

// PutMoverProgress stores the mover's report, for MoverProgress on any meta
// process. It is not part of API: the mover runs inside a meta process.
func (s *Service) PutMoverProgress(ctx context.Context, p MoverProgress) error {
	b := encodeProgress(&p)
	if err := s.update(ctx, func(t txn) error { return t.Put(keyProgress, b) }); err != nil {
		return fmt.Errorf("put mover progress: %w", err)
	}
	return nil
}

// MoverProgress returns the mover's latest report (zero before the first).
func (s *Service) MoverProgress(ctx context.Context) (MoverProgress, error) {
	var p MoverProgress
	err := s.view(ctx, func(t txn) error {
		v, ok, err := t.Get(keyProgress)
		if err != nil || !ok {
			return err
		}
		p, err = decodeProgress(v)
		return err
	})
	if err != nil {
		return MoverProgress{}, fmt.Errorf("mover progress: %w", err)
	}
	return p, nil
}
