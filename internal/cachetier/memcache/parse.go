package memcache

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxLine is the longest reply line accepted (VALUE lines are under 300
// bytes; error lines are short).
const maxLine = 4096

// maxKey is memcached's key length limit.
const maxKey = 250

// CheckKey reports whether memcached can hold key, as ErrBadKey if not.
func CheckKey(key string) error {
	if len(key) == 0 || len(key) > maxKey {
		return fmt.Errorf("%w: %d bytes (want 1..%d)", ErrBadKey, len(key), maxKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("%w: %q has a space or control character", ErrBadKey, key)
		}
	}
	return nil
}

// readLine returns the next reply line without its CRLF.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, r.Size())
	case err == io.EOF && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	case len(line) > maxLine:
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, maxLine)
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, fmt.Errorf("%w: line %q not ended by CRLF", ErrProtocol, clip(line))
	}
	return line[:len(line)-2], nil
}

// lineError returns the error an error line stands for, or nil if line is
// not one.
func lineError(line []byte) error {
	switch {
	case string(line) == "ERROR":
		return &replyError{ErrClient, string(line)}
	case bytes.HasPrefix(line, []byte("CLIENT_ERROR")):
		return &replyError{ErrClient, string(line)}
	case bytes.HasPrefix(line, []byte("SERVER_ERROR")):
		// memcached says "SERVER_ERROR object too large for cache"; the
		// server is alive and well, the value just does not fit.
		if bytes.Contains(line, []byte("too large")) {
			return &replyError{ErrTooLarge, string(line)}
		}
		return &replyError{ErrServer, string(line)}
	}
	return nil
}

// unexpected reports a reply line that is neither what the command expects
// nor an error line.
func unexpected(cmd string, line []byte) error {
	if err := lineError(line); err != nil {
		return err
	}
	return fmt.Errorf("%w: unexpected reply %q to %s", ErrProtocol, clip(line), cmd)
}

// readValues reads the reply to a get of keys: VALUE lines, each followed by
// its data, then END. Values must come in the order of keys (memcached
// answers hits in request order; a key asked twice may come twice). For each
// value it calls extend with the value's size (to push the deadline out) and
// into with the key's index, the flags and the size; into returns a buffer
// of exactly that length to read the data into, or nil to skip the data.
func readValues(r *bufio.Reader, keys []string, maxValue int, into func(i int, flags uint32, n int) []byte, extend func(n int)) error {
	next := 0
	for {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if string(line) == "END" {
			return nil
		}
		i, flags, n, err := parseValueLine(line, keys, next, maxValue)
		if err != nil {
			return err
		}
		next = i + 1
		if extend != nil {
			extend(n)
		}
		buf := into(i, flags, n)
		switch {
		case buf == nil:
			if _, err := r.Discard(n); err != nil {
				return eof(err)
			}
		case len(buf) != n:
			return fmt.Errorf("memcache: value buffer of %d bytes for a %d-byte value", len(buf), n)
		default:
			if _, err := io.ReadFull(r, buf); err != nil {
				return eof(err)
			}
		}
		var crlf [2]byte
		if _, err := io.ReadFull(r, crlf[:]); err != nil {
			return eof(err)
		}
		if crlf != [2]byte{'\r', '\n'} {
			return fmt.Errorf("%w: value of %q not ended by CRLF", ErrProtocol, keys[i])
		}
	}
}

// parseValueLine parses "VALUE <key> <flags> <bytes>[ <cas>]" and finds key
// in keys[from:].
func parseValueLine(line []byte, keys []string, from, maxValue int) (i int, flags uint32, n int, err error) {
	f := bytes.Split(line, []byte(" "))
	if len(f) < 4 || len(f) > 5 || string(f[0]) != "VALUE" {
		return 0, 0, 0, unexpected("get", line)
	}
	i = -1
	for j := from; j < len(keys); j++ {
		if keys[j] == string(f[1]) {
			i = j
			break
		}
	}
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("%w: value for key %q that was not asked for (or out of order)", ErrProtocol, clip(f[1]))
	}
	fl, err := strconv.ParseUint(string(f[2]), 10, 32)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: bad flags in %q", ErrProtocol, clip(line))
	}
	size, err := strconv.ParseUint(string(f[3]), 10, 63)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: bad size in %q", ErrProtocol, clip(line))
	}
	if size > uint64(maxValue) {
		return 0, 0, 0, fmt.Errorf("%w: value of %d bytes for %q exceeds the %d-byte limit", ErrProtocol, size, keys[i], maxValue)
	}
	if len(f) == 5 {
		if _, err := strconv.ParseUint(string(f[4]), 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("%w: bad cas in %q", ErrProtocol, clip(line))
		}
	}
	return i, uint32(fl), int(size), nil
}

// parseStored parses the reply to a set.
func parseStored(line []byte) error {
	switch string(line) {
	case "STORED":
		return nil
	case "NOT_STORED", "EXISTS", "NOT_FOUND":
		return &replyError{ErrNotStored, string(line)}
	}
	return unexpected("set", line)
}

// parseDeleted parses the reply to a delete.
func parseDeleted(line []byte) (bool, error) {
	switch string(line) {
	case "DELETED":
		return true, nil
	case "NOT_FOUND":
		return false, nil
	}
	return false, unexpected("delete", line)
}

// parseVersion parses the reply to version.
func parseVersion(line []byte) (string, error) {
	v, ok := bytes.CutPrefix(line, []byte("VERSION "))
	if !ok || len(v) == 0 {
		return "", unexpected("version", line)
	}
	return string(v), nil
}

// parseOK parses the reply to flush_all.
func parseOK(line []byte) error {
	if string(line) == "OK" {
		return nil
	}
	return unexpected("flush_all", line)
}

// eof turns a clean EOF in the middle of a reply into ErrUnexpectedEOF.
func eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const n = 64
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
