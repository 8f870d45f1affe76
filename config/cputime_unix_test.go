//go:build unix

package config_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user and system, every
// thread): on a machine shared with other work, a benchmark's CPU time per
// byte says more than its wall time.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
