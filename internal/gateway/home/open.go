package home

import (
	"context"
	"net/url"
)

// Open opens the home a URL names: file:///DIR, s3://BUCKET/PREFIX?...,
// tessera://META_ADDR/PATH?... (see the package comment and OpenS3,
// OpenTesseraURL). An unknown scheme or a malformed URL is a permanent
// ErrInvalidPath naming what was wrong.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, permanent("open", rawURL, ErrInvalidPath, "%v", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, permanent("open", rawURL, ErrInvalidPath, "file:// URL with host %q: want file:///ABSOLUTE/DIR", u.Host)
		}
		if u.Path == "" || u.Path[0] != '/' {
			return nil, permanent("open", rawURL, ErrInvalidPath, "want file:///ABSOLUTE/DIR")
		}
		return OpenFile(u.Path)
	case "s3":
		return OpenS3(ctx, u)
	case "tessera":
		return OpenTesseraURL(ctx, u)
	}
	return nil, permanent("open", u.Redacted(), ErrInvalidPath, "scheme %q: want file, s3 or tessera", u.Scheme)
}
