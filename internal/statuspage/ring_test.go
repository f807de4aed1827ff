package statuspage

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestTee: warnings and errors land in the ring with the logger's
// attributes and groups, newest first, at most its size; everything still
// reaches the wrapped handler at its own level.
func TestTee(t *testing.T) {
	var out bytes.Buffer
	ring := NewRing(3)
	log := slog.New(Tee(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}), ring))
	log.Debug("not kept, not written")
	log.Info("written, not kept")
	log.With("role", "meta").WithGroup("mover").Warn("round failed", "err", "boom", slog.Group("srv", "id", "b1"))
	for i := range 4 {
		log.Error(fmt.Sprintf("error %d", i))
	}
	recs, total := ring.Recent()
	if total != 5 || len(recs) != 3 {
		t.Fatalf("ring holds %d of %d records, want 3 of 5", len(recs), total)
	}
	for i, want := range []string{"error 3", "error 2", "error 1"} {
		if recs[i].Msg != want || recs[i].Level != "ERROR" {
			t.Fatalf("record %d: %+v, want %s at ERROR (newest first)", i, recs[i], want)
		}
	}
	ring2 := NewRing(0)
	log2 := slog.New(Tee(slog.NewTextHandler(&out, nil), ring2))
	log2.With("role", "meta").WithGroup("mover").Warn("round failed", "err", "boom", slog.Group("srv", "id", "b1"))
	recs, _ = ring2.Recent()
	if len(recs) != 1 || recs[0].Attrs != "role=meta mover.err=boom mover.srv.id=b1" {
		t.Fatalf("kept %+v, want the attributes role=meta mover.err=boom mover.srv.id=b1", recs)
	}
	s := out.String()
	if strings.Contains(s, "not written") || !strings.Contains(s, "written, not kept") || strings.Count(s, "error ") != 4 {
		t.Fatalf("the wrapped handler wrote:\n%s", s)
	}
	long := strings.Repeat("x", 10*maxRecordText)
	log2.Warn(long, "v", long)
	recs, _ = ring2.Recent()
	if len(recs[0].Msg) > maxRecordText+4 || len(recs[0].Attrs) > maxRecordText+4 {
		t.Fatalf("a long record kept %d+%d bytes, want each cut at %d", len(recs[0].Msg), len(recs[0].Attrs), maxRecordText)
	}
}
