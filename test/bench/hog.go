package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
)

// runHog is the -hog-child mode: one core kept busy until stdin closes.
func runHog(in io.Reader) {
	runtime.GOMAXPROCS(1)
	go func() {
		_, _ = io.Copy(io.Discard, in)
		os.Exit(0)
	}()
	for x := uint64(0); ; x++ {
		if x == 0 {
			runtime.Gosched()
		}
	}
}

// startHogs starts n -hog-child processes (a CPU hog beside the run) and
// returns what stops them.
func startHogs(n int) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var procs []*exec.Cmd
	var pipes []io.Closer
	stop = func() {
		for _, p := range pipes {
			_ = p.Close()
		}
		for _, c := range procs {
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command(exe, "-hog-child")
		w, err := c.StdinPipe()
		if err != nil {
			stop()
			return nil, err
		}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("start a CPU hog: %w", err)
		}
		procs, pipes = append(procs, c), append(pipes, w)
	}
	return stop, nil
}
