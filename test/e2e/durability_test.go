package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

// genConfig is a valid Kong config whose content depends on n, of at least
// size bytes.
func genConfig(n int, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"_format_version":"3.0","_comment":"push %d","services":[`, n)
	for i := 0; b.Len() < size || i == 0; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"svc-%d-%d","host":"backend-%d.default.svc","port":80,"tags":["k8s-name:svc-%d","k8s-namespace:default"],"routes":[{"name":"route-%d-%d","paths":["/p%d"],"strip_path":true}]}`, n, i, i, i, n, i, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

type pushAck struct {
	gen  uint64
	hash string
}

// TestCrashResume kills a hub with kill -9 at random points while pushes are
// under way, at least 20 times, restarting on the same data dir: after each
// restart the store holds a generation at least as new as every
// acknowledged one (the acknowledged config itself when it is the newest),
// and the sink converges on the last acknowledged generation.
func TestCrashResume(t *testing.T) {
	const cycles = 20
	dataDir := t.TempDir()
	out := filepath.Join(t.TempDir(), "out.json")
	sinks := writeSinks(t, "- name: out\n  file:\n    path: "+out+"\n")
	rng := rand.New(rand.NewPCG(1, 2))
	var acks []pushAck
	n := 0
	for cycle := 0; cycle < cycles; cycle++ {
		h := harness.StartHub(t, bins, "--data-dir", dataDir, "--sinks", sinks, "--file-sink-root", filepath.Dir(out))
		cl := hubclient.New(harness.Dial(t, h.Addr))
		ctx := context.Background()

		// After a restart: nothing acknowledged is lost.
		if len(acks) > 0 {
			cur, err := cl.Hub.GetConfig(ctx, &confighubv1.GetConfigRequest{})
			if err != nil {
				t.Fatalf("cycle %d: GetConfig after restart: %v", cycle, err)
			}
			last := acks[len(acks)-1]
			if cur.GetGeneration() < last.gen {
				t.Fatalf("cycle %d: LOST: store at generation %d, acknowledged %d", cycle, cur.GetGeneration(), last.gen)
			}
			if cur.GetGeneration() == last.gen && cur.GetHash() != last.hash {
				t.Fatalf("cycle %d: generation %d has hash %s, acknowledged %s", cycle, last.gen, cur.GetHash(), last.hash)
			}
			// These configs (below 64 KiB) live in the bolt store's index:
			// a push killed mid-way leaves no record file behind.
			if blobs, err := os.ReadDir(filepath.Join(dataDir, "confighub.db.blobs")); err != nil || len(blobs) != 0 {
				t.Fatalf("cycle %d: record files after restart: %d (%v), want none", cycle, len(blobs), err)
			}
			// The sink converges on the current (>= last acknowledged) generation.
			harness.Eventually(t, 20*time.Second, func() bool {
				b, err := os.ReadFile(out)
				return err == nil && config.Hash(b) == cur.GetHash()
			}, "cycle %d: file sink holds generation %d", cycle, cur.GetGeneration())
		}

		// Push until killed at a random point.
		var mu sync.Mutex
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				n++
				body := genConfig(n, 2<<10)
				mu.Unlock()
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				res, err := cl.Push(pctx, hubclient.Push{Config: body})
				cancel()
				if err != nil {
					return // the hub died mid-push: not acknowledged
				}
				mu.Lock()
				acks = append(acks, pushAck{res.GetGeneration(), res.GetHash()})
				mu.Unlock()
			}
		}()
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond) // a random kill point, not synchronisation
		h.Kill()
		close(stop)
		<-done
	}
	// A final restart: every sink converges on the last acknowledged generation.
	h := harness.StartHub(t, bins, "--data-dir", dataDir, "--sinks", sinks, "--file-sink-root", filepath.Dir(out))
	cl := hubclient.New(harness.Dial(t, h.Addr))
	cur, err := cl.Hub.GetConfig(context.Background(), &confighubv1.GetConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	last := acks[len(acks)-1]
	lost := 0
	if cur.GetGeneration() < last.gen || (cur.GetGeneration() == last.gen && cur.GetHash() != last.hash) {
		lost = 1
	}
	harness.Eventually(t, 20*time.Second, func() bool {
		b, err := os.ReadFile(out)
		return err == nil && config.Hash(b) == cur.GetHash()
	}, "final: file sink holds generation %d", cur.GetGeneration())
	t.Logf("crash: cycles=%d acks=%d lost=%d (last acknowledged generation %d, stored %d)", cycles, len(acks), lost, last.gen, cur.GetGeneration())
	fmt.Printf("crash: cycles=%d acks=%d lost=%d\n", cycles, len(acks), lost)
	if lost != 0 || len(acks) < cycles {
		t.Fatalf("lost=%d acks=%d", lost, len(acks))
	}
}

// TestLargeConfigUpload: a 20 MiB config goes through UploadConfig (the
// client switches by size), is acknowledged, and the file sink writes bytes
// whose hash is the acknowledged one.
func TestLargeConfigUpload(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, "- name: out\n  file:\n    path: "+out+"\n"), "--file-sink-root", filepath.Dir(out))
	cl := hubclient.New(harness.Dial(t, h.Addr))
	body := genConfig(1, 20<<20)
	res, err := cl.Push(context.Background(), hubclient.Push{Config: body})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetHash() != config.Hash(body) || res.GetGeneration() != 1 {
		t.Fatalf("ack %+v", res)
	}
	harness.Eventually(t, 60*time.Second, func() bool {
		b, err := os.ReadFile(out)
		return err == nil && config.Hash(b) == res.GetHash()
	}, "the file sink holds the 20 MiB config")
	t.Logf("20 MiB upload: %d bytes, hash %s, file hash equal", len(body), res.GetHash())
}

// TestBadInputChangesNothing: every bad push or upload gets its code and a
// message naming the problem; the previous config is still served and the
// sink was not touched.
func TestBadInputChangesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	h := harness.StartHub(t, bins, "--max-config-bytes", "65536", "--sinks", writeSinks(t, "- name: out\n  file:\n    path: "+out+"\n"), "--file-sink-root", filepath.Dir(out))
	cc := harness.Dial(t, h.Addr)
	cl := hubclient.New(cc, hubclient.WithUnaryLimit(1<<10), hubclient.WithChunkBytes(512))
	ctx := context.Background()
	good := genConfig(0, 100)
	first, err := cl.Push(ctx, hubclient.Push{Config: good})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 20*time.Second, func() bool {
		b, err := os.ReadFile(out)
		return err == nil && string(b) == string(good)
	}, "file sink applied the first config")
	before, _ := os.Stat(out)
	applies := func() uint64 {
		st, err := cl.Hub.GetStatus(ctx, &confighubv1.GetStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return st.GetSinks()[0].GetAppliesTotal()
	}
	appliesBefore := applies()

	upload := func(total uint64, hash string, chunks ...[]byte) error {
		st, err := cl.Hub.UploadConfig(ctx)
		if err != nil {
			return err
		}
		_ = st.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{TotalSize: total, ExpectedHash: hash}}})
		for _, c := range chunks {
			_ = st.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: c}})
		}
		_, err = st.CloseAndRecv()
		return err
	}
	other := genConfig(2, 100)
	cases := []struct {
		name string
		do   func() error
		code codes.Code
		msg  string
	}{
		{"invalid JSON", func() error {
			_, err := cl.Push(ctx, hubclient.Push{Config: []byte(`{"_format_version":`)})
			return err
		}, codes.InvalidArgument, "not valid JSON"},
		{"invalid YAML", func() error { _, err := cl.Push(ctx, hubclient.Push{Config: []byte("a: [b\n")}); return err }, codes.InvalidArgument, "not valid YAML"},
		{"missing _format_version", func() error { _, err := cl.Push(ctx, hubclient.Push{Config: []byte(`{"services":[]}`)}); return err }, codes.InvalidArgument, "_format_version is missing"},
		{"unsupported _format_version", func() error {
			_, err := cl.Push(ctx, hubclient.Push{Config: []byte(`{"_format_version":"0.1"}`)})
			return err
		}, codes.InvalidArgument, `"0.1" is not supported`},
		{"over the limit", func() error { _, err := cl.Push(ctx, hubclient.Push{Config: genConfig(3, 70000)}); return err }, codes.ResourceExhausted, "exceeds the limit of 65536"},
		{"truncated upload", func() error { return upload(uint64(len(other)), config.Hash(other), other[:10]) }, codes.InvalidArgument, "truncated"},
		{"hash mismatch", func() error { return upload(uint64(len(other)), config.Hash(good), other) }, codes.InvalidArgument, "hash mismatch"},
		{"stale expected_generation", func() error {
			_, err := cl.Push(ctx, hubclient.Push{Config: other, ExpectedGeneration: first.GetGeneration() + 5})
			return err
		}, codes.FailedPrecondition, "generation"},
	}
	for _, c := range cases {
		err := c.do()
		s, _ := status.FromError(err)
		if s.Code() != c.code || !strings.Contains(s.Message(), c.msg) {
			t.Errorf("%s: got %v %q, want %v naming %q", c.name, s.Code(), s.Message(), c.code, c.msg)
		}
	}
	cur, err := cl.Hub.GetConfig(ctx, &confighubv1.GetConfigRequest{})
	if err != nil || cur.GetGeneration() != first.GetGeneration() || cur.GetHash() != first.GetHash() {
		t.Fatalf("the previous config is not served any more: %v %v", cur, err)
	}
	after, _ := os.Stat(out)
	if !after.ModTime().Equal(before.ModTime()) || applies() != appliesBefore {
		t.Fatal("a rejected push touched the sink")
	}
}

// TestBrokenStoreFileFailsStart: a corrupt store file stops the hub with a
// message naming it; it is never reset silently.
func TestBrokenStoreFileFailsStart(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "confighub.db")
	garbage := []byte(strings.Repeat("not a bbolt file ", 4096))
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bins.Path("confighub"), "--listen", "127.0.0.1:0", "--data-dir", dir).CombinedOutput()
	if err == nil {
		t.Fatalf("hub started on a corrupt store:\n%s", out)
	}
	if !strings.Contains(string(out), db) {
		t.Fatalf("the error does not name %s:\n%s", db, out)
	}
	if b, _ := os.ReadFile(db); string(b) != string(garbage) {
		t.Fatal("the corrupt store file was changed")
	}
}
