package memcache

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func values(t *testing.T, reply string, keys []string, maxValue int) (map[string]string, error) {
	t.Helper()
	got := map[string]string{}
	bufs := map[int][]byte{}
	r := bufio.NewReaderSize(strings.NewReader(reply), 4096)
	err := readValues(r, keys, maxValue, func(i int, flags uint32, n int) []byte {
		b := make([]byte, n)
		bufs[i] = b
		return b
	}, nil)
	for i, b := range bufs {
		got[keys[i]] = string(b)
	}
	return got, err
}

func TestReadValues(t *testing.T) {
	keys := []string{"a", "b", "c"}
	got, err := values(t, "VALUE a 0 3\r\nabc\r\nVALUE c 7 0 99\r\n\r\nEND\r\n", keys, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a"] != "abc" || got["c"] != "" {
		t.Fatalf("got %q", got)
	}
	// Values with CRLF inside are data, not lines.
	got, err = values(t, "VALUE b 0 6\r\nx\r\nEND\r\nEND\r\n", keys, 10)
	if err != nil || got["b"] != "x\r\nEND" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReadValuesErrors(t *testing.T) {
	keys := []string{"a", "b"}
	for _, tc := range []struct {
		reply string
		want  error
	}{
		{"", nil}, // EOF
		{"END", nil},
		{"END\n", ErrProtocol},
		{"VALUE a 0 3\r\nabc", nil},
		{"VALUE a 0 3\r\nabcd\r\nEND\r\n", ErrProtocol},
		{"VALUE a 0 11\r\n", ErrProtocol}, // over maxValue
		{"VALUE a 0 -1\r\n", ErrProtocol},
		{"VALUE a x 1\r\n", ErrProtocol},
		{"VALUE a 0 1 z\r\n", ErrProtocol},
		{"VALUE z 0 1\r\nz\r\nEND\r\n", ErrProtocol},                     // not asked for
		{"VALUE b 0 1\r\nb\r\nVALUE a 0 1\r\na\r\nEND\r\n", ErrProtocol}, // out of order
		{"VALUE a 0 1 2 3\r\n", ErrProtocol},
		{"STORED\r\n", ErrProtocol},
		{"SERVER_ERROR out of memory\r\n", ErrServer},
		{"SERVER_ERROR object too large for cache\r\n", ErrTooLarge},
		{"CLIENT_ERROR bad command line format\r\n", ErrClient},
		{"ERROR\r\n", ErrClient},
		{strings.Repeat("x", 5000) + "\r\n", ErrProtocol},
	} {
		_, err := values(t, tc.reply, keys, 10)
		if err == nil {
			t.Errorf("reply %.40q: no error", tc.reply)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("reply %.40q: got %v, want %v", tc.reply, err, tc.want)
		}
	}
}

func TestSimpleReplies(t *testing.T) {
	if err := parseStored([]byte("STORED")); err != nil {
		t.Error(err)
	}
	if err := parseStored([]byte("NOT_STORED")); !errors.Is(err, ErrNotStored) {
		t.Error(err)
	}
	if err := parseStored([]byte("DELETED")); !errors.Is(err, ErrProtocol) {
		t.Error(err)
	}
	if ok, err := parseDeleted([]byte("NOT_FOUND")); ok || err != nil {
		t.Error(ok, err)
	}
	if v, err := parseVersion([]byte("VERSION 1.6.18")); v != "1.6.18" || err != nil {
		t.Error(v, err)
	}
	if _, err := parseVersion([]byte("VERSION ")); !errors.Is(err, ErrProtocol) {
		t.Error(err)
	}
}

func TestCheckKey(t *testing.T) {
	for _, k := range []string{"", "a b", "a\nb", "a\x7f", strings.Repeat("k", 251)} {
		if err := CheckKey(k); !errors.Is(err, ErrBadKey) {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
	}
	if err := CheckKey("tb:" + strings.Repeat("f", 64) + ":12"); err != nil {
		t.Error(err)
	}
}

// FuzzReadValues feeds arbitrary server replies to the get parser: it must
// return (an error or values within the limits), never panic, and never
// read past what the reply announces.
func FuzzReadValues(f *testing.F) {
	for _, s := range []string{
		"END\r\n",
		"VALUE a 0 3\r\nabc\r\nEND\r\n",
		"VALUE a 1 0\r\n\r\nVALUE b 4294967295 2 18446744073709551615\r\nxy\r\nEND\r\n",
		"VALUE a 0 99999999999999999999\r\n",
		"VALUE a 0 5\r\nab",
		"SERVER_ERROR object too large for cache\r\n",
		"VALUE  0 1\r\n",
		"VALUE a 0 1\r\nx\n\rEND\r\n",
		"\r\n",
		"\n",
	} {
		f.Add([]byte(s))
	}
	keys := []string{"a", "b", "a"}
	const maxValue = 64
	f.Fuzz(func(t *testing.T, reply []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(reply), 4096)
		total := 0
		err := readValues(r, keys, maxValue, func(i int, flags uint32, n int) []byte {
			if i < 0 || i >= len(keys) || n < 0 || n > maxValue {
				t.Fatalf("into(%d, %d, %d) out of range", i, flags, n)
			}
			total += n
			if i == 1 {
				return nil // skipped values must be consumed too
			}
			return make([]byte, n)
		}, nil)
		if err == nil && total > len(reply) {
			t.Fatalf("parsed %d value bytes from a %d-byte reply", total, len(reply))
		}
	})
}

// FuzzReplyLine feeds arbitrary one-line replies to the other parsers.
func FuzzReplyLine(f *testing.F) {
	for _, s := range []string{"STORED\r\n", "VERSION 1.6\r\n", "DELETED\r\n", "OK\r\n", "SERVER_ERROR x\r\n", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, reply []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(reply), 4096)
		line, err := readLine(r)
		if err != nil {
			return
		}
		parseStored(line)
		parseDeleted(line)
		parseVersion(line)
		parseOK(line)
	})
}
