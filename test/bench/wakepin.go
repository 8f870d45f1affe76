package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
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
func pinnedWakeDelays(n int) (_ []wakeTry, err error) {
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
		if rerr := restoreThreads(&all); rerr != nil {
			err = errors.Join(err, fmt.Errorf("restore the CPU sets: %w", rerr))
		}
	}()
	out := make([]wakeTry, 0, n)
	for range n {
		// Again at every try: the runtime may have started threads.
		if err := pinThreads(self, &mine, &others, nil); err != nil {
			return nil, err
		}
		out = append(out, wakeOnce())
	}
	return out, nil
}

// restoreThreads gives every thread of the process the CPU set all. A
// thread started during a pass inherits its creator's set, maybe still a
// pinned one: passes go on until one finds no thread it has not set yet.
func restoreThreads(all *unix.CPUSet) error {
	set := map[int]bool{}
	var errs []error
	for range 5 {
		n := len(set)
		if err := pinThreads(-1, all, all, set); err != nil {
			errs = append(errs, err)
		}
		if len(set) == n {
			break
		}
	}
	return errors.Join(errs...)
}

// pinThreads sets the CPU set of thread self to mine and of every other
// thread of the process (but those already in set, when set is not nil)
// to others, and adds the threads it set to set. It goes on past a thread
// it cannot set; one that exited meanwhile is no error.
func pinThreads(self int, mine, others *unix.CPUSet, set map[int]bool) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || set[tid] {
			continue
		}
		cpus := others
		if tid == self {
			cpus = mine
		}
		if err := unix.SchedSetaffinity(tid, cpus); err != nil {
			if !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("thread %d: %w", tid, err))
			}
			continue
		}
		if set != nil {
			set[tid] = true
		}
	}
	return errors.Join(errs...)
}
