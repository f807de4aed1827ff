package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"tessera/internal/block/disk"
)

func parsePageCache(args ...string) (int64, error) {
	fs := flag.NewFlagSet("blockd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pc := addPageCacheFlag(fs)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	return pc.config()
}

// TestPageCacheFlag: --page-cache-window defaults to the store's window,
// 0 keeps none (the block server's config says so with a negative value,
// its zero being the default), and a negative size is refused naming the
// flag.
func TestPageCacheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int64
	}{{nil, disk.DefaultWriteCache}, {[]string{"--page-cache-window", "268435456"}, 256 << 20}, {[]string{"--page-cache-window", "0"}, -1}} {
		got, err := parsePageCache(c.args...)
		if err != nil || got != c.want {
			t.Errorf("%v: %d, %v; want %d", c.args, got, err, c.want)
		}
	}
	if _, err := parsePageCache("--page-cache-window", "-5"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--page-cache-window") {
		t.Errorf("--page-cache-window -5: %v; want a usage error naming the flag", err)
	}
}
