package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/confighub/confighub/test/kongemu"
)

// runFleet is the child mode: n emulated gateways (one listener each on
// 127.0.0.1, one shared parse cache), their URLs printed as one JSON line,
// served until stdin closes.
func runFleet(n int, in io.Reader, out io.Writer) error {
	cache := kongemu.NewCache()
	gws := make([]*kongemu.Gateway, 0, n)
	defer func() {
		for _, g := range gws {
			_ = g.Close()
		}
	}()
	urls := make([]string, 0, n)
	for range n {
		g := kongemu.New(kongemu.WithCache(cache))
		u, err := g.Start()
		if err != nil {
			return fmt.Errorf("start gateway %d: %w", len(gws), err)
		}
		gws = append(gws, g)
		urls = append(urls, u)
	}
	if err := json.NewEncoder(out).Encode(urls); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin (or dies)
	return nil
}

// fleet is a running child process of emulated gateways.
type fleet struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	urls  []string
}

func startFleet(n int) (*fleet, error) {
	cmd, stdin, stdout, err := startSelf(context.Background(), "-fleet", fmt.Sprint(n))
	if err != nil {
		return nil, fmt.Errorf("start fleet: %w", err)
	}
	f := &fleet{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReaderSize(stdout, 1<<20).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &f.urls)
	}
	if err != nil || len(f.urls) != n {
		f.close()
		return nil, fmt.Errorf("fleet did not report %d URLs: %v", n, err)
	}
	return f, nil
}

func (f *fleet) close() {
	_ = f.stdin.Close()
	waitOrKill(f.cmd)
}

// inProcFleet is n emulated gateways in this process (scenarios 3 and 6,
// where the fleet is small).
func inProcFleet(n int) ([]*kongemu.Gateway, []string, error) {
	cache := kongemu.NewCache()
	var gws []*kongemu.Gateway
	var urls []string
	for range n {
		g := kongemu.New(kongemu.WithCache(cache))
		u, err := g.Start()
		if err != nil {
			closeGateways(gws)
			return nil, nil, err
		}
		gws = append(gws, g)
		urls = append(urls, u)
	}
	return gws, urls, nil
}

func closeGateways(gws []*kongemu.Gateway) {
	for _, g := range gws {
		_ = g.Close()
	}
}

// poster is the baseline sender: the same POST /config the kong sink sends
// (check_hash=1, flatten_errors=1, JSON body), from a plain loop bounded to
// `concurrency` requests in flight.
type poster struct {
	client *http.Client
}

func newPoster() *poster {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no global cap: one warm connection per gateway, like a sink's own client
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     5 * time.Minute,
	}
	return &poster{client: &http.Client{Transport: tr}}
}

func (p *poster) post(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/config?check_hash=1&flatten_errors=1", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := p.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusNotModified {
		return fmt.Errorf("POST %s/config: %s", url, res.Status)
	}
	return nil
}

// postAll sends body to every url with at most concurrency in flight.
func (p *poster) postAll(ctx context.Context, urls []string, body []byte, concurrency int) error {
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, u := range urls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := p.post(ctx, u, body); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func (p *poster) close() { p.client.CloseIdleConnections() }
