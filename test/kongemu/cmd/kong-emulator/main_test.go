package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// --count 3 serves three gateways, prints their URLs, and stops with ctx.
func TestRunServesCountGateways(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut syncBuf
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--count", "3"}, pw, &errOut)
		pw.Close()
		done <- err
	}()
	// run prints the URLs as the gateways listen: read them as they come.
	var urls []string
	sc := bufio.NewScanner(pr)
	for len(urls) < 3 && sc.Scan() {
		urls = append(urls, sc.Text())
	}
	if len(urls) < 3 {
		t.Fatalf("urls %q, stderr %s", urls, errOut.String())
	}
	for _, u := range urls {
		resp, err := http.Get(u + "/status")
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if st["configuration_hash"] != "00000000000000000000000000000000" {
			t.Fatalf("%s: %v", u, st)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--count", "0"}, {"--listen", "nope"}, {"--bogus"}} {
		if err := run(context.Background(), args, &syncBuf{}, &syncBuf{}); err == nil {
			t.Errorf("%v: want an error", args)
		}
	}
}
