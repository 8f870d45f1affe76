package harness

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// Get GETs url with c, with "Authorization: Bearer token" unless token is
// empty, and returns the status and the whole body; it fails the test on a
// transport error or after 30 s.
func Get(t testing.TB, c *http.Client, url, token string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}
