package cachetier

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{"memcached://h1:11211", []string{"h1:11211"}},
		{"memcached://h1:1,h2:2/", []string{"h1:1", "h2:2"}},
		{"MEMCACHED://127.0.0.1:11211,[::1]:11212", []string{"127.0.0.1:11211", "[::1]:11212"}},
	} {
		got, err := ParseURL(tc.url)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	for _, tc := range []struct {
		url, mention string // the error must name the bad part
	}{
		{"h1:11211", "want memcached://"},
		{"redis://h1:6379", `scheme "redis"`},
		{"memcached://", "empty server list"},
		{"memcached:///", "empty server list"},
		{"memcached://h1", `server "h1" has no port`},
		{"memcached://h1:11211,h2", `server "h2" has no port`},
		{"memcached://h1:11211,,h2:1", "server 2 is empty"},
		{"memcached://h1:11211,", "server 2 is empty"},
		{"memcached://:11211", `server ":11211" has no host`},
		{"memcached://h1:port", `port "port"`},
		{"memcached://h1:0", `port "0"`},
		{"memcached://h1:70000", `port "70000"`},
		{"memcached://h1:1,h1:1", "listed twice"},
		{"memcached://h1:1/path", `unexpected "/path"`},
		{"memcached://user@h1:1", `unexpected "@h1:1"`},
		{"memcached://[::1]", `server "[::1]" has no port`},
	} {
		_, err := ParseURL(tc.url)
		if !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ParseURL(%q) = %v; want ErrBadURL mentioning %q", tc.url, err, tc.mention)
		}
	}
}

func TestOpenRejects(t *testing.T) {
	if _, err := Open("memcached://h1", Options{}); !errors.Is(err, ErrBadURL) {
		t.Errorf("Open of a bad URL: %v", err)
	}
	if _, err := Open("memcached://h1:1", Options{ChunkSize: 1000}); err == nil {
		t.Errorf("Open with a 1000-byte chunk size: no error")
	}
	if _, err := Open("memcached://h1:1", Options{Namespace: "a b"}); err == nil {
		t.Errorf("Open with a namespace with a space: no error")
	}
}
