package s3

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
)

// TestPerClientSlowDown: past the requests in flight allowed to one
// client address, a request is answered 503 with an S3 SlowDown
// document at once; once one ends, the next is served.
func TestPerClientSlowDown(t *testing.T) {
	app := fiber.New()
	app.Use(perClient(1))
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	app.Get("/", func(c fiber.Ctx) error {
		entered <- struct{}{}
		<-release
		return c.SendString("ok")
	})
	first := make(chan *http.Response, 1)
	go func() {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
		if err != nil {
			t.Error(err)
		}
		first <- resp
	}()
	<-entered
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "<Code>SlowDown</Code>") {
		t.Errorf("a second request in flight: %d %q, want 503 SlowDown", resp.StatusCode, body)
	}
	close(release)
	if r := <-first; r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("the first request: %v", r)
	}
	select {
	case <-entered:
		t.Fatal("the refused request reached the handler")
	case <-time.After(0):
	}
	resp, err = app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a request after the first ended: %v %v, want 200", resp, err)
	}
}
