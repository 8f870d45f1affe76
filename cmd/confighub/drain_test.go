package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/test/harness"
)

// TestShutdownEndsStatusWatches: an open WatchStatus (a controller always
// has one) does not hold a graceful shutdown for --shutdown-timeout; the
// watcher gets Unavailable (so its client reconnects) and the hub exits 0.
func TestShutdownEndsStatusWatches(t *testing.T) {
	dir := t.TempDir()
	sinks := filepath.Join(dir, "sinks.yaml")
	if err := os.WriteFile(sinks, []byte("- name: f1\n  file:\n    path: "+filepath.Join(dir, "out.json")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, addr := startHub(t, regexp.MustCompile(`msg="confighub serving" listen=(127\.0\.0\.1:[0-9]+)`),
		"--metrics-listen", "", "--sinks", sinks, "--file-sink-root", dir, "--shutdown-timeout", "1h")
	if serving := regexp.MustCompile(`.*confighub serving.*`).FindString(h.logs.String()); !strings.Contains(serving, "store=memory") || strings.Contains(serving, "data_dir") {
		t.Errorf("store=memory names a data dir it does not use: %s", serving)
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := confighubv1.NewConfigHubServiceClient(cc)
	if _, err := hc.PushConfig(context.Background(), &confighubv1.PushConfigRequest{Config: []byte(`{"_format_version":"3.0"}`)}); err != nil {
		t.Fatal(err)
	}
	w, err := hc.WatchStatus(context.Background(), &confighubv1.WatchStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatalf("first event: %v", err)
	}

	h.stop() // SIGTERM
	errc := make(chan error, 1)
	go func() {
		for {
			if _, err := w.Recv(); err != nil {
				errc <- err
				return
			}
		}
	}()
	select {
	case <-h.exited:
		if h.code != 0 {
			t.Fatalf("exit %d:\n%s", h.code, h.logs.String())
		}
	case <-time.After(30 * time.Second): // failsafe: --shutdown-timeout is 1h
		t.Fatalf("shutdown waited for the open status watch:\n%s", h.logs.String())
	}
	if err := <-errc; status.Code(err) != codes.Unavailable || status.Convert(err).Message() != server.ShutdownMessage {
		t.Fatalf("the watcher got %v, want Unavailable %q", err, server.ShutdownMessage)
	}
}

// TestDocsQuoteShutdownMessage: the message docs/api.md quotes for a watch
// ended by a shutdown is the one the hub sends (the quote may wrap lines).
func TestDocsQuoteShutdownMessage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if doc := strings.Join(strings.Fields(string(b)), " "); !strings.Contains(doc, `("`+server.ShutdownMessage+`")`) {
		t.Fatalf("docs/api.md does not quote the shutdown message %q", server.ShutdownMessage)
	}
}
