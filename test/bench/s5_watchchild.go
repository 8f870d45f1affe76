package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// watchDrainWait is how long the watchers get to read the last change
// after the last push.
const watchDrainWait = 30 * time.Second

// childReady is the line the watch child writes once every watcher has its
// start snapshot.
const childReady = "ready"

// watchTally is what the normal watchers saw by the time they drained (or
// watchDrainWait passed).
type watchTally struct {
	Watchers int `json:"watchers"`
	// SawGens saw every generation after their start snapshot, by events
	// or by the snapshot they resumed from after a cut-over.
	SawGens int `json:"saw_generations"`
	// Complete read up to the last change without a cut-over (revisions
	// the hub coalesced away within a round are skipped, not missed).
	Complete int `json:"complete"`
	// Resumed were cut over at least once and resumed from a snapshot.
	Resumed  int    `json:"resumed"`
	CutOvers int    `json:"cut_overs"`
	Events   int    `json:"events"`
	Changes  uint64 `json:"changes"` // changes since the first start snapshot
	Behind   int    `json:"behind"`  // had not read the last change at the end of the wait
}

// watchChild is the parent's end of a -watch-child process: the 999
// normal watchers run in their own process, as a hub's watchers do (other
// programs, other hosts), so their reading does not share the hub's Go
// scheduler and heap; they still share the machine's 2 cores.
type watchChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startWatchChild(addr string) (*watchChild, error) {
	cmd, in, out, err := startSelf(context.Background(), "-watch-child", addr)
	if err != nil {
		return nil, fmt.Errorf("start the watchers: %w", err)
	}
	c := &watchChild{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	if line, err := c.line(); err != nil || line != childReady {
		c.close()
		return nil, fmt.Errorf("watchers: %q, want %q (%v)", line, childReady, err)
	}
	return c, nil
}

func (c *watchChild) line() (string, error) {
	if !c.out.Scan() {
		if err := c.out.Err(); err != nil {
			return "", err
		}
		return "", io.ErrUnexpectedEOF
	}
	return c.out.Text(), nil
}

// drain waits until every watcher read revision rev (at most
// watchDrainWait) and returns what they saw of the generations up to gen.
func (c *watchChild) drain(rev, gen uint64) (watchTally, error) {
	var t watchTally
	if _, err := fmt.Fprintf(c.in, "%d %d\n", rev, gen); err != nil {
		return t, err
	}
	line, err := c.line()
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal([]byte(line), &t)
}

func (c *watchChild) close() {
	_ = c.in.Close()
	_ = c.cmd.Wait()
}

// runWatchChild is the -watch-child mode: n watchers of addr's default
// stream over watcherConns connections; childReady once each has its start
// snapshot; then for each line "REV GEN" read from in, the tally (JSON)
// once every watcher read REV or watchDrainWait passed. It returns when
// in closes.
func runWatchChild(addr string, n int, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var conns []*grpc.ClientConn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range watcherConns {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	stats := make([]watchStats, n)
	var ready, wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var mu sync.Mutex
	var watchErr error
	for i := range stats {
		ready.Add(1)
		client := confighubv1.NewConfigHubServiceClient(conns[i%len(conns)])
		wg.Go(func() {
			st := &stats[i]
			first := true
			defer func() {
				if first {
					ready.Done()
				}
			}()
			s, err := client.WatchStatus(ctx, &confighubv1.WatchStatusRequest{})
			if err != nil {
				mu.Lock()
				watchErr = errors.Join(watchErr, err)
				mu.Unlock()
				return
			}
			for {
				ev, err := s.Recv()
				if err != nil {
					return
				}
				mu.Lock()
				st.record(ev, first)
				mu.Unlock()
				if first {
					first = false
					ready.Done()
				}
			}
		})
	}
	ready.Wait()
	if watchErr != nil {
		return fmt.Errorf("watchers: %w", watchErr)
	}
	fmt.Fprintln(out, childReady)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var rev, gen uint64
		if _, err := fmt.Sscan(sc.Text(), &rev, &gen); err != nil {
			return fmt.Errorf("watch child: %q: %w", sc.Text(), err)
		}
		deadline := time.Now().Add(watchDrainWait)
		for {
			mu.Lock()
			t := tally(stats, rev, gen)
			mu.Unlock()
			if t.Behind == 0 || time.Now().After(deadline) {
				b, err := json.Marshal(t)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return sc.Err()
}

// record counts one event; first is the watch's start snapshot.
func (st *watchStats) record(ev *confighubv1.WatchStatusResponse, first bool) {
	rev := ev.GetRevision()
	st.see(ev)
	switch {
	case first:
		st.snapRev, st.lastRev = rev, rev
		st.firstGen = ev.GetSnapshot().GetGeneration()
	case ev.GetSnapshot() != nil:
		st.cutOvers++
		st.lastRev = rev
	default:
		st.events++
		st.lastRev = rev
	}
}

// tally sums what the watchers saw up to revision rev and generation gen.
func tally(stats []watchStats, rev, gen uint64) watchTally {
	t := watchTally{Watchers: len(stats)}
	if len(stats) > 0 {
		t.Changes = rev - stats[0].snapRev
	}
	for _, st := range stats {
		if st.lastRev < rev {
			t.Behind++
		}
		if st.lastRev >= rev && st.cutOvers == 0 {
			t.Complete++
		}
		if st.sawAll(gen) {
			t.SawGens++
		}
		if st.cutOvers > 0 {
			t.Resumed++
		}
		t.CutOvers += st.cutOvers
		t.Events += st.events
	}
	return t
}
