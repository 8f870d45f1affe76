package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// thisCPU is the CPU the calling thread runs on (getcpu(2)), -1 if unknown.
func thisCPU() int {
	var c uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&c)), 0, 0); e != 0 {
		return -1
	}
	return int(c)
}

// pinnedWakeDelays is wakeDelays with the starter's thread pinned to one
// CPU and every other thread of the process to another, so that the
// started goroutine can only run on the other vCPU, idle until then: its
// wait is that vCPU's wake-up and the scheduler's hand-over, without the
// starter's vCPU to wait for. Every thread gets the process's CPU set back
// before it returns.
func pinnedWakeDelays(n int) (_ []time.Duration, err error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < 8*int(unsafe.Sizeof(all)) && len(cpus) < 2; c++ {
		if all.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return nil, errors.New("fewer than 2 CPUs")
	}
	var mine, others unix.CPUSet
	mine.Set(cpus[0])
	others.Set(cpus[1])

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := unix.Gettid()
	defer func() {
		if rerr := pinThreads(-1, &all, &all); rerr != nil {
			err = errors.Join(err, fmt.Errorf("restore the CPU sets: %w", rerr))
		}
	}()
	out := make([]time.Duration, 0, n)
	for range n {
		// Again at every try: the runtime may have started threads.
		if err := pinThreads(self, &mine, &others); err != nil {
			return nil, err
		}
		out = append(out, wakeOnce().wait)
	}
	return out, nil
}

// pinThreads sets the CPU set of thread self to mine and of every other
// thread of the process to others. A thread that exits meanwhile is
// skipped.
func pinThreads(self int, mine, others *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		set := others
		if tid == self {
			set = mine
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	return nil
}
