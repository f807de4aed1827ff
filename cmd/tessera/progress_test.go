package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"tessera/internal/admin"
)

// fakeProgress is a progressOut writing to buffers, on a clock the test
// moves.
func fakeProgress(mode progressMode) (*progressOut, *bytes.Buffer, *time.Time) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	p := &progressOut{mode: mode, w: &buf, enc: json.NewEncoder(&buf), now: func() time.Time { return now }, every: linesEvery}
	return p, &buf, &now
}

// TestProgressLines: not on a terminal, a phase's first and last reports
// are always shown, others at most every linesEvery, with rate and ETA.
func TestProgressLines(t *testing.T) {
	p, buf, now := fakeProgress(modeLines)
	p.report(admin.Progress{Op: "fsck", Phase: "walk"})
	p.report(admin.Progress{Op: "fsck", Phase: "walk", Done: 7, Total: 7})
	for i := int64(0); i <= 10; i++ {
		p.report(admin.Progress{Op: "fsck", Phase: "check", Done: i, Total: 10, Bytes: i << 20, TotalBytes: 10 << 20})
		*now = now.Add(time.Second)
	}
	p.finish()
	want := []string{
		"fsck walk: 0 recipe entries",
		"fsck walk: 7/7 recipe entries (100%)",
		"fsck check: 0/10 blocks (0%), 0 B/10.0 MiB",
		"fsck check: 2/10 blocks (20%), 2.0 MiB/10.0 MiB, 1.0 blocks/s, 1.0 MiB/s, ETA 8s",
		"fsck check: 4/10 blocks (40%), 4.0 MiB/10.0 MiB, 1.0 blocks/s, 1.0 MiB/s, ETA 6s",
		"fsck check: 6/10 blocks (60%), 6.0 MiB/10.0 MiB, 1.0 blocks/s, 1.0 MiB/s, ETA 4s",
		"fsck check: 8/10 blocks (80%), 8.0 MiB/10.0 MiB, 1.0 blocks/s, 1.0 MiB/s, ETA 2s",
		"fsck check: 10/10 blocks (100%), 10.0 MiB/10.0 MiB, 1.0 blocks/s, 1.0 MiB/s, ETA 0s",
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestProgressJSON: with --json every shown report is a JSON object with
// rate and ETA, findings become objects too, and the result comes last.
func TestProgressJSON(t *testing.T) {
	p, buf, now := fakeProgress(modeJSON)
	p.report(admin.Progress{Op: "gc", Phase: "scan", Total: 4, TotalBytes: 400})
	*now = now.Add(2 * time.Second)
	p.report(admin.Progress{Op: "gc", Phase: "scan", Done: 2, Total: 4, Bytes: 200, TotalBytes: 400})
	(&jsonLines{enc: p.enc, event: "problem"}).Write([]byte("block x: LOST\nsecond"))
	p.finish()
	p.result("gc", map[string]any{"removed": 3}, errors.New("boom"))
	var events []map[string]any
	dec := json.NewDecoder(buf)
	for dec.More() {
		var e map[string]any
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("output is not JSON lines: %v\n%s", err, buf)
		}
		events = append(events, e)
	}
	if len(events) != 4 {
		t.Fatalf("%d events, want start, end, problem, result: %v", len(events), events)
	}
	end := events[1]
	if end["event"] != "progress" || end["done"] != 2.0 || end["rate"] != 1.0 || end["bytes_rate"] != 100.0 || end["eta_seconds"] != 2.0 {
		t.Fatalf("phase end %v, want done 2 at 1 block/s, 100 B/s, 2 s left", end)
	}
	if e := events[2]; e["event"] != "problem" || e["text"] != "block x: LOST" {
		t.Fatalf("finding %v", e)
	}
	if r := events[3]; r["event"] != "result" || r["op"] != "gc" || r["ok"] != false || r["error"] != "boom" || r["removed"] != 3.0 {
		t.Fatalf("result %v", r)
	}
}
