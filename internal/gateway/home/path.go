package home

import (
	"strings"
)

// clean checks a home path and returns it without leading or trailing
// slashes ("" for the root). It refuses "..", NUL and empty components
// rather than resolving them: a gateway never has a reason to send them,
// and refusing them is what keeps a path inside the home.
func clean(op, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", permanent(op, p, ErrInvalidPath, "NUL in path")
	}
	s := strings.TrimPrefix(p, "/")
	s = strings.TrimSuffix(s, "/")
	if s == "" || s == "." {
		return "", nil
	}
	for _, c := range strings.Split(s, "/") {
		switch c {
		case "", ".", "..":
			return "", permanent(op, p, ErrInvalidPath, "path component %q", c)
		}
	}
	return s, nil
}

// parent returns the directory part of a cleaned path ("" for the root's
// children) and its last component.
func split(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}
