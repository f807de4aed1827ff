package main

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestMetricsFlag: --metrics takes HOST:PORT, refuses anything else naming
// the flag and the value, and says in the ready line where it listens.
func TestMetricsFlag(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if mf, err := startMetrics("", log); err != nil || mf.reg != nil || mf.ready() != "" {
		t.Fatalf("--metrics off: %+v, %v", mf, err)
	}
	for _, bad := range []string{"9400", "localhost", "http://127.0.0.1:9400"} {
		_, err := startMetrics(bad, log)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--metrics") || !strings.Contains(err.Error(), bad) {
			t.Errorf("--metrics %q: %v, want a usage error naming the flag and the value", bad, err)
		}
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := startMetrics(busy.Addr().String(), log); err == nil || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Errorf("--metrics on a port in use: %v, want an error naming it", err)
	}
	mf, err := startMetrics("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	if r := mf.ready(); !strings.HasPrefix(r, " metrics=127.0.0.1:") || strings.HasSuffix(r, ":0") {
		t.Errorf("ready line field %q, want the port chosen", r)
	}
}
