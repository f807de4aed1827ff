package s3

import (
	"io"
	"net"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/versity/versitygw/s3api/utils"
)

// Keep-alive and chunked request bodies.
//
// fasthttp streams request bodies (versitygw's StreamRequestBody) and
// parses the next request on a kept connection from wherever the last
// one's body reading stopped. versitygw drains a body of a known length
// left unread, but not a chunked one (Transfer-Encoding: chunked): past
// its last chunk fasthttp's stream goes back to the socket for another
// chunk header, so a drain cannot tell "done" from "more to come". Go
// clients send chunked bodies when they do not know the length, such as
// minio-go's zero-byte PUT (an aws-chunked payload of one empty signed
// chunk, in an HTTP chunked body): the handler never reads a zero-byte
// body, the unread chunks were parsed as the next request, and its 400
// reached the client as an unsolicited response on an idle connection.
//
// syncChunkedBody hands the handlers the chunked stream through a reader
// that notes its end, and reads what they left of it once the response is
// decided (bounded, as versitygw's drain is); a body it cannot finish
// closes the connection instead.

// Bounds of the read of an unread chunked body after the response.
const (
	maxChunkedDrain     = 256 << 10
	chunkedDrainIdle    = time.Second
	chunkedDrainOverall = 5 * time.Second
)

// endNoting notes whether its reader has said io.EOF.
type endNoting struct {
	r   io.Reader
	eof bool
}

func (e *endNoting) Read(p []byte) (int, error) {
	if e.eof {
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

func syncChunkedBody() fiber.Handler {
	return func(c fiber.Ctx) error {
		stream := c.Request().BodyStream()
		if stream == nil || c.Request().Header.ContentLength() != -1 {
			return c.Next() // no body, or one of known length (versitygw drains those)
		}
		body := &endNoting{r: stream}
		// versitygw's signature check wraps the body reader found here
		// (its own default is the same stream).
		utils.ContextKeyBodyReader.Set(c, body)
		err := c.Next()
		if c.Request().BodyStream() == nil {
			return err // read whole as the request's bytes (a non-streaming handler)
		}
		if !body.eof && !drainChunked(c, body) {
			c.Response().Header.SetConnectionClose()
		}
		return err
	}
}

// drainChunked reads what is left of body, at most maxChunkedDrain bytes
// within the idle and overall bounds, and reports whether it reached the
// end.
func drainChunked(c fiber.Ctx, body *endNoting) bool {
	var conn net.Conn
	if rc := c.RequestCtx(); rc != nil {
		conn = rc.Conn()
	}
	if conn != nil {
		defer conn.SetReadDeadline(time.Time{})
	}
	deadline := time.Now().Add(chunkedDrainOverall)
	buf := make([]byte, 32<<10)
	for total := 0; total <= maxChunkedDrain; {
		if conn != nil {
			next := time.Now().Add(chunkedDrainIdle)
			if next.After(deadline) {
				next = deadline
			}
			if err := conn.SetReadDeadline(next); err != nil {
				return false
			}
		}
		n, err := body.Read(buf)
		total += n
		if body.eof {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
