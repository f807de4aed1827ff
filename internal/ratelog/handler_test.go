package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestHandlerOneLinePerMessage: a thousand refusals of one kind give one
// line per interval, with the count held back; another kind and Info lines
// get through.
func TestHandlerOneLinePerMessage(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	log := slog.New(NewHandler(slog.NewTextHandler(&out, nil), time.Second, func() time.Time { return now }))
	for range 1000 {
		log.Warn("refused a connection", "peer", "127.0.0.2:1")
	}
	log.Warn("refused a call", "peer", "127.0.0.3:1")
	log.Info("listening")
	now = now.Add(2 * time.Second)
	log.With("port", "meta").Warn("refused a connection", "peer", "127.0.0.2:1")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[3], "suppressed=999") {
		t.Errorf("last line %q: want suppressed=999", lines[3])
	}
}
