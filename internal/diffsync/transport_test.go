package diffsync

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// A RoundTripper closes the request body even when it fails (net/http's
// contract): a failing token source must not leak it.
func TestHeaderTransportClosesBodyOnAuthError(t *testing.T) {
	body := &closeRecorder{Reader: strings.NewReader("{}")}
	req, err := http.NewRequest(http.MethodPut, "http://127.0.0.1:1/services/x", body)
	if err != nil {
		t.Fatal(err)
	}
	tr := &headerTransport{base: http.DefaultTransport, headers: http.Header{},
		auth: func() (string, error) { return "", errors.New("no token") }}
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("want the token error")
	}
	if !body.closed {
		t.Fatal("request body left open")
	}
}
