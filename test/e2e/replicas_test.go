package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/test/etcdtest"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu/dataplane"
)

// The replica tests run three confighub processes with --store etcd against
// an etcd embedded in the test process, or with CONFIGHUB_ETCD_BIN set (make
// test-etcd) a real etcd server process from that binary, and six file
// sinks partitioned among them. The replicas reach etcd through a loopback
// proxy that can stop forwarding (etcd unreachable with its connections
// open, as behind a partition).

const (
	replicaTTL   = "2s"
	replicaSinks = 6
)

// etcdServer is the embedded etcdtest.Server or an etcdtest.Process.
type etcdServer interface {
	Endpoints() []string
	Stop()
	Restart()
}

// strictTiming: the bounds on takeover, failing and serving again are
// checked, not only logged (make test-etcd sets CONFIGHUB_TIMING=strict; on
// a CI machine shared with other jobs they are measured only).
func strictTiming() bool { return os.Getenv("CONFIGHUB_TIMING") == "strict" }

func startEtcd(t *testing.T) etcdServer {
	if bin := os.Getenv("CONFIGHUB_ETCD_BIN"); bin != "" {
		p := etcdtest.StartProcess(t, bin)
		t.Logf("etcd: %s", p)
		return p
	}
	return etcdtest.Start(t)
}

type replicaSet struct {
	t       *testing.T
	etcd    etcdServer
	proxy   *pausableProxy
	outDir  string
	mu      sync.Mutex
	hubs    map[string]*harness.Hub
	clients map[string]confighubv1.ConfigHubServiceClient
}

func startReplicaSet(t *testing.T) *replicaSet {
	t.Helper()
	e := startEtcd(t)
	rs := &replicaSet{t: t, etcd: e, proxy: startProxy(t, e.Endpoints()[0]), outDir: t.TempDir(), hubs: map[string]*harness.Hub{}, clients: map[string]confighubv1.ConfigHubServiceClient{}}
	for _, id := range []string{"r0", "r1", "r2"} {
		rs.start(id)
	}
	admin := confighubv1.NewSinkAdminServiceClient(harness.Dial(t, rs.hub("r0").Addr))
	for i := range replicaSinks {
		name := fmt.Sprintf("f%d", i)
		_, err := admin.PutSink(context.Background(), &confighubv1.PutSinkRequest{Sink: &confighubv1.Sink{
			Name: name,
			Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: filepath.Join(rs.outDir, name+".json")}},
		}})
		if err != nil {
			t.Fatalf("put sink %s: %v", name, err)
		}
	}
	rs.waitSettled("start")
	return rs
}

func (rs *replicaSet) start(id string) *harness.Hub {
	rs.t.Helper()
	h := harness.StartHub(rs.t, bins, "--store", "etcd", "--etcd-endpoints", rs.proxy.url(),
		"--etcd-prefix", "/e2e", "--replica-id", id, "--lease-ttl", replicaTTL, "--file-sink-root", rs.outDir)
	c := confighubv1.NewConfigHubServiceClient(harness.Dial(rs.t, h.Addr))
	rs.mu.Lock()
	rs.hubs[id], rs.clients[id] = h, c
	rs.mu.Unlock()
	return h
}

func (rs *replicaSet) hub(id string) *harness.Hub {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.hubs[id]
}

func (rs *replicaSet) forget(id string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.hubs, id)
	delete(rs.clients, id)
}

func (rs *replicaSet) live() map[string]confighubv1.ConfigHubServiceClient {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[string]confighubv1.ConfigHubServiceClient{}
	for id, c := range rs.clients {
		out[id] = c
	}
	return out
}

var ownedRE = regexp.MustCompile(`sinks owned.* owned=\[([^\]]*)\]`)

// owned is what a replica last logged as the sinks it runs.
func owned(h *harness.Hub) []string {
	m := ownedRE.FindAllStringSubmatch(h.Output(), -1)
	if len(m) == 0 || m[len(m)-1][1] == "" {
		return nil
	}
	return strings.Split(m[len(m)-1][1], ",")
}

// settled: the live replicas own disjoint sets of sinks covering all.
func (rs *replicaSet) settled() (bool, map[string][]string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	seen := map[string]string{}
	by := map[string][]string{}
	for id, h := range rs.hubs {
		for _, s := range owned(h) {
			if seen[s] != "" {
				return false, by
			}
			seen[s] = id
			by[id] = append(by[id], s)
		}
	}
	// With these sink names and replica ids rendezvous hashing gives every
	// replica at least one sink: a replica owning none has not joined yet.
	return len(seen) == replicaSinks && len(by) == len(rs.hubs), by
}

func (rs *replicaSet) waitSettled(what string) map[string][]string {
	rs.t.Helper()
	var by map[string][]string
	harness.Eventually(rs.t, 30*time.Second, func() bool {
		ok, b := rs.settled()
		by = b
		return ok
	}, "%s: every sink owned by exactly one live replica (last seen: %v)", what, &by) // a pointer: printed as it is at the timeout
	return by
}

// converged: seen from every live replica, every sink applied generation
// gen or a later one.
// waitServingAgain waits for every replica to report SERVING after etcd
// came back at since (it restarted or answered again) and, with strict
// timing, fails when the slowest took more than about 2 s.
func (rs *replicaSet) waitServingAgain(t *testing.T, since time.Time, what string) {
	t.Helper()
	var worst time.Duration
	for id, h := range rs.hubs {
		harness.Eventually(t, 30*time.Second, func() bool { return healthOf(t, h.Addr) == "SERVING" }, "%s SERVING again after etcd %s", id, what)
		worst = max(worst, time.Since(since))
	}
	t.Logf("replicas serving again %.2fs after etcd %s", worst.Seconds(), what)
	if worst > 2500*time.Millisecond && strictTiming() {
		t.Errorf("replicas served again %.2fs after etcd %s, want within about 2s", worst.Seconds(), what)
	}
}

func (rs *replicaSet) converged(gen uint64) bool {
	for _, c := range rs.live() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.GetStatus(ctx, &confighubv1.GetStatusRequest{})
		cancel()
		if err != nil || len(st.GetSinks()) != replicaSinks {
			return false
		}
		for _, s := range st.GetSinks() {
			if s.GetAppliedGeneration() < gen {
				return false
			}
		}
	}
	return true
}

type ack struct {
	gen  uint64
	hash string
	body []byte
}

// pusher pushes distinct configs to the live replicas in turn and keeps
// every acknowledgement.
type pusher struct {
	rs   *replicaSet
	mu   sync.Mutex
	acks []ack
	n    int
}

func (p *pusher) pushOnce(t *testing.T) (ack, bool) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	body := fmt.Appendf(nil, `{"_format_version":"3.0","services":[{"name":"svc","host":"h%d.example.com"}]}`, n)
	live := p.rs.live()
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return ack{}, false
	}
	c := live[ids[n%len(ids)]]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: body})
	if err != nil {
		return ack{}, false // not acknowledged: may or may not be stored
	}
	a := ack{gen: resp.GetGeneration(), hash: resp.GetHash(), body: body}
	p.mu.Lock()
	p.acks = append(p.acks, a)
	p.mu.Unlock()
	return a, true
}

func (p *pusher) run(t *testing.T, stop <-chan struct{}) {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			p.pushOnce(t)
		}
	}
}

func (p *pusher) last() ack {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best ack
	for _, a := range p.acks {
		if a.gen > best.gen {
			best = a
		}
	}
	return best
}

// mustPush pushes until one push is acknowledged (bounded).
func (p *pusher) mustPush(t *testing.T) ack {
	t.Helper()
	var a ack
	harness.Eventually(t, 20*time.Second, func() bool {
		var ok bool
		a, ok = p.pushOnce(t)
		return ok
	}, "a push acknowledged")
	return a
}

// checkNothingLost: acknowledged generations are distinct (the etcd
// transaction hands out each once, whichever replica took the push), every
// replica serves the newest acknowledged configuration, and every file
// sink holds exactly its bytes.
func (rs *replicaSet) checkNothingLost(t *testing.T, p *pusher) int {
	t.Helper()
	p.mu.Lock()
	acks := slices.Clone(p.acks)
	p.mu.Unlock()
	lost := 0
	seen := map[uint64]bool{}
	for _, a := range acks {
		if seen[a.gen] {
			t.Errorf("generation %d acknowledged twice", a.gen)
		}
		seen[a.gen] = true
	}
	last := p.last()
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(last.gen) }, "every sink applied generation %d", last.gen)
	for id, c := range rs.live() {
		got, err := c.GetConfig(context.Background(), &confighubv1.GetConfigRequest{})
		if err != nil {
			t.Fatalf("%s: GetConfig: %v", id, err)
		}
		if got.GetGeneration() != last.gen || got.GetHash() != last.hash {
			lost++
			t.Errorf("%s serves generation %d (%s), the last acknowledged is %d (%s)", id, got.GetGeneration(), got.GetHash(), last.gen, last.hash)
		}
	}
	for i := range replicaSinks {
		b, err := os.ReadFile(filepath.Join(rs.outDir, fmt.Sprintf("f%d.json", i)))
		if err != nil || string(b) != string(last.body) {
			lost++
			t.Errorf("sink f%d holds %q (%v), want generation %d's bytes", i, b, err, last.gen)
		}
	}
	return lost
}

// mostLoaded is the live replica owning the most sinks.
func mostLoaded(by map[string][]string) string {
	best := ""
	for id, s := range by {
		if best == "" || len(s) > len(by[best]) || (len(s) == len(by[best]) && id < best) {
			best = id
		}
	}
	return best
}

// TestReplicasKillOwner: kill -9 the replica owning the most sinks while
// pushes go to every replica; its sinks move within the lease TTL, no
// acknowledged push is lost, every sink converges.
func TestReplicasKillOwner(t *testing.T) {
	rs := startReplicaSet(t)
	p := &pusher{rs: rs}
	first := p.mustPush(t)
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(first.gen) }, "first generation applied")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(t, stop) })
	const cycles = 5
	var worst time.Duration
	for cycle := 1; cycle <= cycles; cycle++ {
		by := rs.waitSettled(fmt.Sprintf("cycle %d", cycle))
		victim := mostLoaded(by)
		h := rs.hub(victim)
		rs.forget(victim)
		h.Kill()
		killed := time.Now()
		// A generation acknowledged after the kill must reach every sink,
		// the victim's included: that needs the takeover.
		after := p.mustPush(t)
		harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(after.gen) },
			"cycle %d: every sink applied generation %d after %s was killed", cycle, after.gen, victim)
		took := time.Since(killed)
		worst = max(worst, took)
		t.Logf("cycle %d: killed %s (owned %v); every sink applied generation %d %.1fs later", cycle, victim, by[victim], after.gen, took.Seconds())
		rs.start(victim)
	}
	close(stop)
	wg.Wait()
	rs.waitSettled("end")
	lost := rs.checkNothingLost(t, p)
	t.Logf("replicas: cycles=%d acks=%d lost=%d takeover=%.1fs", cycles, len(p.acks), lost, worst.Seconds())
	if ttl, _ := time.ParseDuration(replicaTTL); worst > ttl+time.Second && strictTiming() {
		t.Errorf("takeover took %.1fs, want within --lease-ttl %s + 1s", worst.Seconds(), replicaTTL)
	}
}

// TestReplicasSigstop: a hung replica (SIGSTOP) loses its lease and its
// sinks move; after SIGCONT it notices, registers again and the sinks are
// owned exactly once again.
func TestReplicasSigstop(t *testing.T) {
	rs := startReplicaSet(t)
	p := &pusher{rs: rs}
	first := p.mustPush(t)
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(first.gen) }, "first generation applied")
	by := rs.waitSettled("before SIGSTOP")
	victim := mostLoaded(by)
	h := rs.hub(victim)
	rs.forget(victim)
	// A status watch on another replica is not affected by the hang and
	// sees the victim's sinks applied by their new owners.
	var watcherID string
	for id := range rs.live() {
		watcherID = id
		break
	}
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	watch, err := rs.live()[watcherID].WatchStatus(wctx, &confighubv1.WatchStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := watch.Recv(); err != nil || m.GetSnapshot() == nil {
		t.Fatalf("first watch message: %v %v, want a snapshot", m, err)
	}
	h.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	after := p.mustPush(t)
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(after.gen) },
		"every sink applied generation %d while %s is stopped", after.gen, victim)
	seen := map[string]bool{}
	var lastRev uint64
	for len(seen) < len(by[victim]) {
		m, err := watch.Recv()
		if err != nil {
			t.Fatalf("watch on %s: %v (saw %v of %v applied)", watcherID, err, seen, by[victim])
		}
		lastRev = m.GetRevision()
		if s := m.GetSink(); s != nil && s.GetAppliedGeneration() >= after.gen && slices.Contains(by[victim], s.GetSink()) {
			seen[s.GetSink()] = true
		}
	}
	wcancel()
	// The watch resumes on yet another replica from the last revision seen:
	// changes only, no snapshot.
	for id, c := range rs.live() {
		if id == watcherID {
			continue
		}
		rctx, rcancel := context.WithCancel(context.Background())
		resumed, err := c.WatchStatus(rctx, &confighubv1.WatchStatusRequest{FromRevision: lastRev})
		if err != nil {
			t.Fatal(err)
		}
		p.mustPush(t)
		m, err := resumed.Recv()
		rcancel()
		if err != nil || m.GetSnapshot() != nil || m.GetRevision() <= lastRev {
			t.Fatalf("resume on %s from revision %d: %v %v, want a change after it", id, lastRev, m, err)
		}
		break
	}
	rs.waitSettled("while " + victim + " is stopped")
	t.Logf("%s stopped (owned %v); its sinks moved and applied generation %d %.1fs later", victim, by[victim], after.gen, time.Since(stopped).Seconds())

	h.Signal(syscall.SIGCONT)
	h.WaitOutput(t, regexp.MustCompile(`lease lost`), 20*time.Second)
	rs.mu.Lock()
	rs.hubs[victim], rs.clients[victim] = h, confighubv1.NewConfigHubServiceClient(harness.Dial(t, h.Addr))
	rs.mu.Unlock()
	// Rendezvous gives it back the same sinks once it is a member again.
	harness.Eventually(t, 30*time.Second, func() bool {
		ok, now := rs.settled()
		return ok && slices.Equal(now[victim], by[victim])
	}, "%s owns %v again and nobody else does", victim, by[victim])
	if lost := rs.checkNothingLost(t, p); lost != 0 {
		t.Fatalf("lost %d", lost)
	}
}

// healthOf runs the real grpc-health-probe against a replica.
func healthOf(t *testing.T, addr string) string {
	bin := filepath.Join(harness.RepoRoot(), "bin", "grpc-health-probe")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("grpc-health-probe is needed (make tools): %v", err)
	}
	out, _ := exec.Command(bin, "-addr", addr, "-connect-timeout", "2s", "-rpc-timeout", "2s").CombinedOutput()
	switch s := string(out); {
	case strings.Contains(s, "NOT_SERVING"):
		return "NOT_SERVING"
	case strings.Contains(s, "SERVING"):
		return "SERVING"
	default:
		return strings.TrimSpace(s)
	}
}

// TestReplicasEtcdRestart: while etcd is down the replicas report
// NOT_SERVING and refuse pushes with Unavailable; when it is back they
// serve again and nothing acknowledged before is lost.
func TestReplicasEtcdRestart(t *testing.T) {
	rs := startReplicaSet(t)
	p := &pusher{rs: rs}
	before := p.mustPush(t)
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(before.gen) }, "generation applied before the restart")

	rs.etcd.Stop()
	for id, h := range rs.hubs {
		harness.Eventually(t, 20*time.Second, func() bool { return healthOf(t, h.Addr) == "NOT_SERVING" }, "%s reports NOT_SERVING while etcd is down", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := rs.live()["r1"].PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(`{"_format_version":"3.0","services":[{"name":"down","host":"x"}]}`)})
	cancel()
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("push while etcd is down: %v, want Unavailable", err)
	}

	rs.etcd.Restart()
	rs.waitServingAgain(t, time.Now(), "restarted")
	after := p.mustPush(t)
	if after.gen != before.gen+1 {
		t.Errorf("first push after the restart got generation %d, want %d (the one before was acknowledged at %d)", after.gen, before.gen+1, before.gen)
	}
	rs.waitSettled("after the etcd restart")
	if lost := rs.checkNothingLost(t, p); lost != 0 {
		t.Fatalf("lost %d", lost)
	}
}

// pausableProxy forwards loopback TCP connections to etcd; paused, it
// keeps every connection open and forwards nothing.
type pausableProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	open   chan struct{} // closed while forwarding
}

func startProxy(t *testing.T, target string) *pausableProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pausableProxy{l: l, target: strings.TrimPrefix(target, "http://"), open: make(chan struct{})}
	close(p.open)
	forward(t, l, func() net.Conn {
		u, _ := net.Dial("tcp", p.target) // etcd down: the client sees the connection close
		return u
	}, p.pipe)
	t.Cleanup(p.Resume) // before forward's cleanup: a paused pipe ends
	return p
}

// forward accepts on l until the test ends and pipes each connection to
// what connect returns (nil: close it) with pipe, one goroutine a way.
func forward(t *testing.T, l net.Listener, connect func() net.Conn, pipe func(dst, src net.Conn)) {
	var wg sync.WaitGroup
	var conns sync.Map
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				u := connect()
				if u == nil {
					return
				}
				defer u.Close()
				conns.Store(c, u)
				defer conns.Delete(c)
				var pipes sync.WaitGroup
				pipes.Go(func() { pipe(u, c) })
				pipes.Go(func() { pipe(c, u) })
				pipes.Wait()
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		conns.Range(func(k, v any) bool { _ = k.(net.Conn).Close(); _ = v.(net.Conn).Close(); return true })
		wg.Wait()
	})
}

func (p *pausableProxy) url() string { return "http://" + p.l.Addr().String() }

func (p *pausableProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			<-open
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Pause stops forwarding; Resume forwards again (what was held goes on).
func (p *pausableProxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = make(chan struct{})
}

func (p *pausableProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// TestReplicasEtcdUnreachable: a push in flight when etcd stops answering
// fails with Unavailable after --etcd-op-timeout (default 2 s), not after
// --lease-ttl; the replicas report NOT_SERVING, and serve again within
// about 2 s of etcd answering again.
func TestReplicasEtcdUnreachable(t *testing.T) {
	rs := startReplicaSet(t)
	p := &pusher{rs: rs}
	before := p.mustPush(t)
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(before.gen) }, "generation applied before etcd goes")

	rs.proxy.Pause()
	paused := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err := rs.live()["r1"].PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(`{"_format_version":"3.0","services":[{"name":"lost","host":"x"}]}`)})
	cancel()
	failed := time.Since(paused)
	t.Logf("push in flight when etcd became unreachable: %v after %.2fs", status.Code(err), failed.Seconds())
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("push in flight when etcd became unreachable: %v, want Unavailable", err)
	}
	if failed > 3*time.Second && strictTiming() {
		t.Errorf("the push failed after %.2fs, want about --etcd-op-timeout (2s)", failed.Seconds())
	}
	for id, h := range rs.hubs {
		harness.Eventually(t, 20*time.Second, func() bool { return healthOf(t, h.Addr) == "NOT_SERVING" }, "%s reports NOT_SERVING while etcd is unreachable", id)
	}
	rs.proxy.Resume()
	rs.waitServingAgain(t, time.Now(), "answered")
	after := p.mustPush(t)
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(after.gen) }, "generation %d applied after etcd is back", after.gen)
	if lost := rs.checkNothingLost(t, p); lost != 0 {
		t.Fatalf("lost %d", lost)
	}
}

var convergedAllRE = regexp.MustCompile(`(?m)^confighub_stream_convergence_seconds_count\{stream="default"\} (\d+)$`)

// convergedCounts scrapes confighub_stream_convergence_seconds_count of
// stream default from every live replica.
func convergedCounts(t *testing.T, rs *replicaSet) map[string]int {
	t.Helper()
	rs.mu.Lock()
	hubs := maps.Clone(rs.hubs)
	rs.mu.Unlock()
	out := map[string]int{}
	for id, h := range hubs {
		m := convergedAllRE.FindStringSubmatch(scrape(t, h.WaitOutput(t, metricsRE, 10*time.Second)))
		n := 0
		if m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		out[id] = n
	}
	return out
}

func sumCounts(c map[string]int) (int, string) {
	total := 0
	var per []string
	for id, n := range c {
		total += n
		per = append(per, fmt.Sprintf("%s=%d", id, n))
	}
	slices.Sort(per)
	return total, strings.Join(per, " ")
}

// convergeTimes is generation -> converge time as a replica's GetStatus
// shows them.
func convergeTimes(t *testing.T, c confighubv1.ConfigHubServiceClient) map[uint64]time.Time {
	t.Helper()
	st, err := c.GetStatus(context.Background(), &confighubv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]time.Time{}
	for _, g := range st.GetGenerations() {
		if g.GetConvergeTime() != nil {
			out[g.GetGeneration()] = g.GetConvergeTime().AsTime()
		}
	}
	return out
}

// TestReplicasConvergenceMetric: summed over the replicas, the convergence
// histogram observes each generation once, whichever replicas run the
// sinks; GetStatus answers the same generations on every replica. After a
// kill -9 of the stream's leader, the replica that takes the lead keeps
// the converge times and counts each later generation once; the killed
// replica, restarted, shows the same times and counts nothing again.
func TestReplicasConvergenceMetric(t *testing.T) {
	rs := startReplicaSet(t)
	p := &pusher{rs: rs}
	pushN := func(n int) {
		for range n {
			a := p.mustPush(t)
			harness.Eventually(t, 30*time.Second, func() bool {
				for _, c := range rs.live() {
					st, err := c.GetStatus(context.Background(), &confighubv1.GetStatusRequest{})
					g := st.GetGenerations()
					if err != nil || len(g) == 0 || g[len(g)-1].GetGeneration() != a.gen || g[len(g)-1].GetConvergeTime() == nil {
						return false
					}
				}
				return true
			}, "generation %d converged, seen from every replica", a.gen)
		}
	}
	const pushes = 8
	pushN(pushes)
	counts := convergedCounts(t, rs)
	total, per := sumCounts(counts)
	t.Logf("confighub_stream_convergence_seconds_count summed over replicas: %d for %d generations (%s)", total, pushes, per)
	if total != pushes {
		t.Errorf("convergence observed %d times over the replicas (%s), want %d: once per generation", total, per, pushes)
	}
	var first *confighubv1.GetStatusResponse
	for id, c := range rs.live() {
		st, err := c.GetStatus(context.Background(), &confighubv1.GetStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = st
			continue
		}
		for i, g := range st.GetGenerations() {
			f := first.GetGenerations()[i]
			if g.GetSinksApplied() != f.GetSinksApplied() || !g.GetConvergeTime().AsTime().Equal(f.GetConvergeTime().AsTime()) {
				t.Errorf("%s: generation %d %v, another replica says %v", id, g.GetGeneration(), g, f)
			}
		}
	}

	// kill -9 of the leader (the replica that counted): another takes the
	// lead, keeps the times, and counts the next generations once.
	leader := ""
	for id, n := range counts {
		if n > 0 && (leader == "" || n > counts[leader]) {
			leader = id
		}
	}
	var witness confighubv1.ConfigHubServiceClient
	for id, c := range rs.live() {
		if id != leader {
			witness = c
			break
		}
	}
	before := convergeTimes(t, witness)
	h := rs.hub(leader)
	rs.forget(leader)
	h.Kill()
	rs.waitSettled("after killing the leader " + leader)
	const more = 3
	pushN(more)
	after := convergeTimes(t, witness)
	for gen, at := range before {
		if _, kept := after[gen]; kept && !after[gen].Equal(at) {
			t.Errorf("generation %d: converge time %v after the takeover, %v before", gen, after[gen], at)
		}
	}
	live := convergedCounts(t, rs)
	total, per = sumCounts(live)
	total += counts[leader]
	t.Logf("after kill -9 of the leader %s and %d more generations: %d observations for %d generations (%s, %s=%d before the kill)", leader, more, total, pushes+more, per, leader, counts[leader])
	if total != pushes+more {
		t.Errorf("convergence observed %d times (%s, killed %s=%d), want %d", total, per, leader, counts[leader], pushes+more)
	}

	// The killed replica restarts: same times, nothing counted again.
	rs.start(leader)
	rs.waitSettled("after restarting " + leader)
	want := convergeTimes(t, witness)
	c := rs.live()[leader]
	harness.Eventually(t, 30*time.Second, func() bool {
		got := convergeTimes(t, c)
		for gen, at := range want {
			if !got[gen].Equal(at) {
				return false
			}
		}
		return true
	}, "the restarted %s shows the converge times of the others", leader)
	if n := convergedCounts(t, rs)[leader]; n != 0 {
		t.Errorf("the restarted %s observed %d convergences, want 0 (they happened before)", leader, n)
	}
}

// balancer is a TCP load balancer in front of the replicas' cluster
// listeners: a new connection goes to the first backend, from to on, that
// answers; while held, new connections are closed at once.
type balancer struct {
	l        net.Listener
	backends []string
	mu       sync.Mutex
	to       int
	hold     bool
}

func startBalancer(t *testing.T, backends ...string) *balancer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{l: l, backends: backends}
	forward(t, l, func() net.Conn {
		b.mu.Lock()
		hold, to := b.hold, b.to
		b.mu.Unlock()
		for i := 0; !hold && i < len(b.backends); i++ {
			if u, err := net.DialTimeout("tcp", b.backends[(to+i)%len(b.backends)], time.Second); err == nil {
				return u
			}
		}
		return nil
	}, func(dst, src net.Conn) { _, _ = io.Copy(dst, src); _ = dst.Close() })
	return b
}

func (b *balancer) set(to int, hold bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.to, b.hold = to, hold
}

// TestReplicasHybridTakeover: Kong data planes (the emulator) reach two
// replicas through a load balancer. Each replica shows every data plane
// (GetStatus, ListSinks, WatchStatus); a data plane that reconnects to the
// other replica moves there at once. When the replica holding the others
// is killed (-9), they keep running their configuration and show
// disconnected on the survivor once its lease expired; a generation pushed
// meanwhile reaches them when they reconnect there.
func TestReplicasHybridTakeover(t *testing.T) {
	e := startEtcd(t)
	certFile, keyFile, pair := clusterCert(t)
	listen := []string{freeAddr(t), freeAddr(t)}
	hubs := make([]*harness.Hub, 2)
	apis := make([]confighubv1.ConfigHubServiceClient, 2)
	admins := make([]confighubv1.SinkAdminServiceClient, 2)
	for i := range hubs {
		hubs[i] = harness.StartHub(t, bins, "--store", "etcd", "--etcd-endpoints", e.Endpoints()[0], "--etcd-prefix", "/hybrid",
			"--replica-id", fmt.Sprintf("r%d", i), "--lease-ttl", replicaTTL,
			"--cluster-listen", listen[i], "--cluster-cert", certFile, "--cluster-cert-key", keyFile)
		conn := harness.Dial(t, hubs[i].Addr)
		apis[i], admins[i] = confighubv1.NewConfigHubServiceClient(conn), confighubv1.NewSinkAdminServiceClient(conn)
	}
	lb := startBalancer(t, listen...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	push := func(api confighubv1.ConfigHubServiceClient, host string) string {
		t.Helper()
		var hash string
		harness.Eventually(t, 20*time.Second, func() bool {
			resp, err := api.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: fmt.Appendf(nil, `{"_format_version":"3.0","services":[{"name":"s","host":%q}]}`, host)})
			hash = hybrid.ConfigHash(&config.Config{Hash: resp.GetHash()})
			return err == nil
		}, "push %s", host)
		return hash
	}
	start := func(id string) *dataplane.DP {
		d := dataplane.Start(dataplane.Options{Addr: lb.l.Addr().String(), Cert: pair, NodeID: id, PingInterval: time.Second,
			ReconnectMin: 100 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
		t.Cleanup(d.Stop)
		return d
	}
	// dataPlanes: what replica i shows of each data plane's sink, when it
	// lists all three in GetStatus and ListSinks.
	dataPlanes := func(i int) map[string]*confighubv1.SinkStatus {
		st, err := apis[i].GetStatus(ctx, &confighubv1.GetStatusRequest{})
		ls, lerr := admins[i].ListSinks(ctx, &confighubv1.ListSinksRequest{})
		if err != nil || lerr != nil || len(st.GetSinks()) != 3 || len(ls.GetSinks()) != 3 {
			return nil
		}
		out := map[string]*confighubv1.SinkStatus{}
		for _, s := range st.GetSinks() {
			out[s.GetSink()] = s
		}
		return out
	}
	runs := func(hash string) func(*confighubv1.SinkStatus) bool {
		return func(s *confighubv1.SinkStatus) bool {
			return s.GetKind() == hybrid.Kind && s.GetDataPlane().GetConnected() && s.GetDataPlane().GetConfigHash() == hash &&
				s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED
		}
	}
	every := func(i int, ok func(*confighubv1.SinkStatus) bool) func() bool {
		return func() bool {
			dps := dataPlanes(i)
			for _, s := range dps {
				if !ok(s) {
					return false
				}
			}
			return dps != nil
		}
	}

	h1 := push(apis[0], "one.local")
	dps := []*dataplane.DP{start("dp-0"), start("dp-1"), start("dp-2")}
	for _, d := range dps {
		if err := d.WaitHash(ctx, h1); err != nil {
			t.Fatal(err)
		}
	}
	for i := range hubs {
		harness.Eventually(t, 30*time.Second, every(i, runs(h1)), "r%d shows the three data planes running generation 1", i)
	}
	w, err := apis[1].WatchStatus(ctx, &confighubv1.WatchStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := w.Recv(); err != nil || len(first.GetSnapshot().GetSinks()) != 3 {
		t.Fatalf("r1's WatchStatus snapshot: %v (%v), want the three data planes", first, err)
	}

	// dp-0 restarts and the balancer sends it to r1: it moves there at once.
	lb.set(1, false)
	dps[0].Stop()
	dps[0] = start("dp-0")
	if err := dps[0].WaitHash(ctx, h1); err != nil {
		t.Fatal(err)
	}
	var on0, on1 []string // printed as last seen at a timeout
	harness.Eventually(t, 30*time.Second, func() bool {
		on0, on1 = owned(hubs[0]), owned(hubs[1])
		return slices.Contains(on1, "dp-0") && !slices.Contains(on0, "dp-0")
	}, "dp-0 runs on r1 (r0 owns %v, r1 %v)", &on0, &on1)
	harness.Eventually(t, 30*time.Second, every(0, runs(h1)), "r0 shows dp-0 connected again")

	// r0 dies with dp-1 and dp-2; the balancer takes no connection until
	// the survivor showed them disconnected.
	lb.set(1, true)
	hubs[0].Kill()
	harness.Eventually(t, 30*time.Second, func() bool {
		dps := dataPlanes(1)
		return dps != nil && !dps["dp-1"].GetDataPlane().GetConnected() && !dps["dp-2"].GetDataPlane().GetConnected() && runs(h1)(dps["dp-0"])
	}, "r1 shows dp-1 and dp-2 disconnected once r0's lease expired")
	h2 := push(apis[1], "two.local")
	if err := dps[0].WaitHash(ctx, h2); err != nil {
		t.Fatal(err)
	}
	for _, d := range dps[1:] {
		if s := d.Stats(); s.Connected || d.Hash() != h1 {
			t.Fatalf("%+v runs %s: want disconnected, still running generation 1", s, d.Hash())
		}
	}
	lb.set(1, false)
	for _, d := range dps {
		if err := d.WaitHash(ctx, h2); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 30*time.Second, every(1, runs(h2)), "r1 shows every data plane running generation 2")
	for _, d := range dps[1:] {
		if s := d.Stats(); s.Connects < 2 {
			t.Fatalf("%+v: did not reconnect", s)
		}
	}
}
