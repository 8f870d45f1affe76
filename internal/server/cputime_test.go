package server

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user + system CPU time so far (benchmarks
// report it per operation: client, server and GC together).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
