package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLimiterPassesOnePerInterval(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &Limiter{Every: time.Second, Now: func() time.Time { return now }}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for i := 0; i < 100; i++ {
		l.Log(log, slog.LevelError, "disk full")
	}
	if n := strings.Count(buf.String(), "disk full"); n != 1 {
		t.Fatalf("%d lines in one interval; want 1:\n%s", n, buf.String())
	}
	now = now.Add(time.Second)
	l.Log(log, slog.LevelError, "disk full")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed=99") {
		t.Fatalf("after the interval: %q; want a second line reporting 99 suppressed", lines)
	}
	now = now.Add(time.Second)
	l.Log(log, slog.LevelError, "disk full")
	if last := buf.String()[strings.LastIndex(strings.TrimSpace(buf.String()), "\n")+1:]; strings.Contains(last, "suppressed") {
		t.Fatalf("a line after a quiet interval reports suppressed lines: %q", last)
	}
}
