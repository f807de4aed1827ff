package s3

import (
	"encoding/xml"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"

	"tessera/internal/clock"
)

// Bounds of what a refused signature's log line repeats of the request.
const (
	maxLoggedCanonical = 1024
	maxLoggedField     = 128
)

// sigMismatch is the part of versitygw's SignatureDoesNotMatch document
// a log line repeats: what the server signed, so a refusal says whether
// the client signed other bytes (a header, the path, the payload hash) or
// with another secret (same canonical request).
type sigMismatch struct {
	Code             string
	AWSAccessKeyID   string `xml:"AWSAccessKeyId"`
	StringToSign     string
	CanonicalRequest string
}

// logSignatureMismatch logs every request refused with
// SignatureDoesNotMatch: the access key id, the canonical request and
// string to sign the server computed (bounded: they hold the request's
// path, query and signed headers), the request's X-Amz-Date and the
// server's clock. The secret and the signatures are not logged.
func logSignatureMismatch(log *slog.Logger, clk clock.Clock) fiber.Handler {
	clk = clock.Or(clk)
	return func(c fiber.Ctx) error {
		err := c.Next()
		if c.Response().StatusCode() != http.StatusForbidden {
			return err
		}
		var m sigMismatch
		if xml.Unmarshal(c.Response().Body(), &m) != nil || m.Code != "SignatureDoesNotMatch" {
			return err
		}
		log.Warn("s3: signature does not match",
			"method", bounded(c.Method(), maxLoggedField),
			"access_key_id", bounded(m.AWSAccessKeyID, maxLoggedField),
			"x_amz_date", bounded(c.Get("X-Amz-Date"), maxLoggedField),
			"server_time", clk.Now().UTC().Format(time.RFC3339),
			"string_to_sign", bounded(m.StringToSign, maxLoggedCanonical),
			"canonical_request", bounded(m.CanonicalRequest, maxLoggedCanonical))
		return err
	}
}

// bounded is s cut to at most n bytes, marked when cut.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "...(cut)"
}
